// The viewer side of the login bench: what the person's browser sees of the live view, recorded in
// the page itself before its own script runs (an init script): when the live-view page was ready,
// when each frame arrived, when the first one was drawn, and whether that first frame was blank.
import type { BrowserContext, Page } from "playwright-core";

/** What the viewer page recorded, times in epoch milliseconds (performance.timeOrigin + now). */
export interface ViewerRecord {
  readonly pageReady: number | undefined;
  /** Arrival of each frame (the `src` of #screen changing), at most MAX_FRAMES. */
  readonly frames: readonly number[];
  readonly firstDrawn: number | undefined;
  /** Share of the first frame's pixels that are not near-white (0 for a blank white page). */
  readonly firstInk: number | undefined;
}

const MAX_FRAMES = 2000;

// Runs in the viewer page (the live view's CSP does not apply to init scripts).
const RECORDER = `(() => {
  const now = () => performance.timeOrigin + performance.now();
  const rec = { pageReady: undefined, frames: [], firstDrawn: undefined, firstInk: undefined };
  Object.defineProperty(window, "__liveView", { value: rec });
  document.addEventListener("DOMContentLoaded", () => {
    rec.pageReady = now();
    const img = document.getElementById("screen");
    if (!img) return;
    new MutationObserver(() => {
      if (!img.getAttribute("src") || rec.frames.length >= ${MAX_FRAMES}) return;
      rec.frames.push(now());
      if (rec.frames.length !== 1) return;
      const probe = new Image();
      probe.onload = () => {
        const c = document.createElement("canvas");
        c.width = 128; c.height = 96;
        const g = c.getContext("2d");
        g.drawImage(probe, 0, 0, c.width, c.height);
        const px = g.getImageData(0, 0, c.width, c.height).data;
        let ink = 0;
        for (let i = 0; i < px.length; i += 4) if (px[i] < 230 || px[i + 1] < 230 || px[i + 2] < 230) ink++;
        rec.firstInk = ink / (px.length / 4);
      };
      probe.src = img.getAttribute("src");
      img.decode().catch(() => {}).then(() => requestAnimationFrame(() => { rec.firstDrawn = now(); }));
    }).observe(img, { attributes: true, attributeFilter: ["src"] });
  });
})();`;

/** Installs the recorder in every page of `ctx` (before the live view's own script). */
export async function recordViewer(ctx: BrowserContext): Promise<void> {
  await ctx.addInitScript(RECORDER);
}

/** What the recorder in `page` holds now. */
export function viewerRecord(page: Page): Promise<ViewerRecord> {
  return page.evaluate(() => (globalThis as unknown as { __liveView: ViewerRecord }).__liveView);
}

/** Waits until the viewer has more than `n` frames and its first one is drawn and probed; the record. */
export async function waitFrames(page: Page, n: number, timeoutMs: number): Promise<ViewerRecord> {
  await page
    .waitForFunction(
      (k) => {
        const r = (globalThis as unknown as { __liveView?: ViewerRecord }).__liveView;
        return !!r && r.frames.length > k && r.firstDrawn !== undefined && r.firstInk !== undefined;
      },
      n,
      { timeout: timeoutMs, polling: 5 },
    )
    .catch(async (err: unknown) => {
      const r = await viewerRecord(page).catch(() => undefined);
      throw new Error(`the viewer saw no frame ${n + 1}: ${JSON.stringify(r)}`, { cause: err });
    });
  return viewerRecord(page);
}
