// A spare's pre-made context and page (issue 25, item 6): made before its login is known, it loads
// nothing until that login has confined it, is confined to that login's hosts and no other, and
// is handed to one login only (no cookie crosses to the next). Real Chromium; requests seen by a
// real server; nothing skips.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { systemClock } from "../../src/clock/clock.js";
import { ConfinedBrowser } from "../../src/login/browser/confined-browser.js";
import { SpareBrowsers } from "../../src/login/browser/spare-browsers.js";
import { html, type Site, startSite } from "./browser/test-site.js";

const CHROMIUM = "/usr/bin/chromium";
vi.setConfig({ testTimeout: 240_000 });
const WAIT = { timeout: 120_000, interval: 50 };

let site: Site;
let homes = "";
const pools: SpareBrowsers[] = [];
const launched: ConfinedBrowser[] = [];

beforeAll(async () => {
  site = await startSite((port) => ({
    "/hello": html("<h1>Sign in</h1>"),
    // Tries the host the spare's page was pre-made for, from the login's own page.
    "/probe": html(`<h1>Probe</h1><img src="http://b.localhost:${port}/leak.png">`),
    "/set": html("<h1>Signed in</h1>", { "set-cookie": "sid=secret-a; Path=/; HttpOnly" }),
  }));
});
afterAll(async () => {
  await site?.close();
});
afterEach(async () => {
  await Promise.all(launched.splice(0).map((b) => b.close()));
  await Promise.all(pools.splice(0).map((p) => p.close()));
  if (homes) rmSync(homes, { recursive: true, force: true });
});

/** A pool of one spare letting both test hosts resolve, pre-making its page for `premade`. */
function pool(premade: string): SpareBrowsers {
  homes = mkdtempSync(path.join(os.tmpdir(), "slaude-premade-"));
  const p = new SpareBrowsers({
    size: 1,
    chromiumPath: CHROMIUM,
    resolvableHosts: () => ["idp.localhost", "b.localhost"],
    premadeFor: () => [`${premade}:${site.port}`],
    homesDir: homes,
    clock: systemClock,
    log: { warn: () => {} },
  });
  pools.push(p);
  p.fill();
  return p;
}

async function login(spares: SpareBrowsers, start: string, blocked: string[] = []) {
  const frames: number[] = [];
  const browser = await ConfinedBrowser.launch({
    chromiumPath: CHROMIUM,
    allowedHosts: [`idp.localhost:${site.port}`],
    startUrl: `http://idp.localhost:${site.port}${start}`,
    viewport: { width: 400, height: 300 },
    onFrame: (f) => frames.push(f.width),
    onBlockedNavigation: (u) => blocked.push(u),
    spares,
  });
  launched.push(browser);
  return { browser, frames };
}

describe("a spare's pre-made page", () => {
  it("loads nothing before its login, then only that login's start page, sized to the login's viewport", async () => {
    const spares = pool("idp.localhost");
    expect(await spares.ready()).toBe(1);
    const before = site.requests.length;
    const { frames } = await login(spares, "/hello");
    await vi.waitFor(() => expect(frames.length).toBeGreaterThan(0), WAIT);
    const seen = site.requests.slice(before).map((r) => `${r.host}${r.path.split("?")[0]}`);
    expect(seen[0]).toBe(`idp.localhost:${site.port}/hello`);
    expect(frames.every((w) => w === 400)).toBe(true);
  });

  it("made for other hosts, is not used: the login's own context refuses the host it was made for", async () => {
    const spares = pool("b.localhost");
    expect(await spares.ready()).toBe(1);
    const blocked: string[] = [];
    const { frames } = await login(spares, "/probe", blocked);
    await vi.waitFor(() => expect(site.paths()).toContain("/ready?/probe"), WAIT);
    await vi.waitFor(() => expect(blocked.some((u) => u.startsWith("http://b.localhost:"))).toBe(true), WAIT);
    await vi.waitFor(() => expect(frames.length).toBeGreaterThan(0), WAIT);
    expect(site.requests.filter((r) => r.host.startsWith("b.localhost"))).toEqual([]);
  });

  it("is handed to one login only: a cookie of one login is not in the next one's browser", async () => {
    const spares = pool("idp.localhost");
    const a = await login(spares, "/set");
    await vi.waitFor(async () => expect((await a.browser.cookies()).map((c) => c.name)).toContain("sid"), WAIT);
    const b = await login(spares, "/hello");
    await vi.waitFor(() => expect(b.frames.length).toBeGreaterThan(0), WAIT);
    expect(await b.browser.cookies()).toEqual([]);
    expect(b.browser.pids()).not.toContain(a.browser.pids()[0]);
  });
});
