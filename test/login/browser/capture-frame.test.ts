// One explicit frame of a page (capture-frame.ts), against real Chromium: a fresh page is captured
// at its viewport's size, every time (a capture without a clip failed on 1 in 20 fresh pages); a
// page scrolled down is captured where it is on screen; a frame smaller than the viewport is
// scaled. Nothing here skips: without Chromium every test fails.

import { type Browser, type CDPSession, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { captureFrame } from "../../../src/login/browser/capture-frame.js";
import { jpegSize } from "../../../src/login/browser/jpeg-size.js";
import { html, type Site, startSite } from "./test-site.js";

const CHROMIUM = "/usr/bin/chromium";

let site: Site;
let browser: Browser;

beforeAll(async () => {
  site = await startSite(() => ({
    "/tall": html('<div style="height:3000px;background:linear-gradient(#fff,#000)"></div>'),
  }));
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--disable-gpu"] });
});
afterAll(async () => {
  await browser?.close();
  await site?.close();
});

/** A page on /tall sized `viewport`, and its CDP session with every method sent recorded. */
async function open(viewport: { width: number; height: number }) {
  const ctx = await browser.newContext({ viewport });
  const page: Page = await ctx.newPage();
  await page.goto(`http://127.0.0.1:${site.port}/tall`);
  const cdp: CDPSession = await ctx.newCDPSession(page);
  const sent: string[] = [];
  const send = cdp.send.bind(cdp);
  (cdp as { send: typeof send }).send = ((method: Parameters<typeof send>[0], params?: never) => {
    sent.push(method);
    return send(method, params);
  }) as typeof send;
  return { ctx, page, cdp, sent };
}

describe("captureFrame", () => {
  it("captures a page just loaded at its viewport's size, on every one of 30 fresh pages", async () => {
    for (let i = 0; i < 30; i++) {
      const { ctx, page, cdp, sent } = await open({ width: 500, height: 400 });
      try {
        const shot = await captureFrame(cdp, { width: 500, height: 400 }, 60, page.viewportSize());
        expect(sent).toEqual(["Page.getLayoutMetrics", "Page.captureScreenshot"]);
        expect(jpegSize(shot.data)).toEqual({ width: 500, height: 400 });
        expect(shot).toMatchObject({ pageWidth: 500, pageHeight: 400 });
      } finally {
        await ctx.close();
      }
    }
  });

  it("captures a scrolled page where it is on screen, not its top", async () => {
    const { ctx, page, cdp } = await open({ width: 300, height: 200 });
    try {
      const top = await captureFrame(cdp, { width: 300, height: 200 }, 90, page.viewportSize());
      await page.evaluate(() => (globalThis as unknown as { scrollTo(x: number, y: number): void }).scrollTo(0, 2600));
      await page.waitForFunction(() => (globalThis as unknown as { scrollY: number }).scrollY >= 2500);
      const down = await captureFrame(cdp, { width: 300, height: 200 }, 90, page.viewportSize());
      expect(jpegSize(down.data)).toEqual({ width: 300, height: 200 });
      // The bottom of the gradient is near black, the top near white: a darker image compresses
      // to other bytes; the same bytes would mean the top was captured again.
      expect(down.data.equals(top.data)).toBe(false);
      const metrics = await cdp.send("Page.getLayoutMetrics");
      const clip = {
        x: metrics.cssVisualViewport.pageX,
        y: metrics.cssVisualViewport.pageY,
        width: 300,
        height: 200,
        scale: 1,
      };
      const reference = await cdp.send("Page.captureScreenshot", { format: "jpeg", quality: 90, clip });
      expect(down.data.equals(Buffer.from(reference.data, "base64"))).toBe(true);
    } finally {
      await ctx.close();
    }
  });

  it("reads the layout metrics and scales when the frame is smaller than the viewport", async () => {
    const { ctx, page, cdp, sent } = await open({ width: 800, height: 600 });
    try {
      const shot = await captureFrame(cdp, { width: 400, height: 300 }, 60, page.viewportSize());
      expect(sent).toEqual(["Page.getLayoutMetrics", "Page.captureScreenshot"]);
      expect(jpegSize(shot.data)).toEqual({ width: 400, height: 300 });
      expect(shot).toMatchObject({ pageWidth: 800, pageHeight: 600 });
    } finally {
      await ctx.close();
    }
  });
});
