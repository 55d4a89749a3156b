// What the confined browser takes from its owner instead of the broker's process: Chromium's PATH
// comes from the options (config/ decides it), and the close grace period runs on the injected
// Clock. Real Chromium against a real HTTP server on 127.0.0.1; nothing here skips.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../../src/clock/clock.js";
import { ConfinedBrowser } from "../../../src/login/browser/confined-browser.js";
import { cmdlineOf, envOf, isAlive } from "../../support/proc.js";
import { html, type Site, startSite } from "./test-site.js";

const CHROMIUM = "/usr/bin/chromium";
let site: Site;
const launched: ConfinedBrowser[] = [];

beforeAll(async () => {
  site = await startSite(() => ({ "/hello": html("<h1>Sign in</h1>") }));
});
afterAll(async () => {
  await site?.close();
});
afterEach(async () => {
  await Promise.all(launched.splice(0).map((b) => b.close()));
});

async function launch(
  extra: { searchPath?: string; clock?: ManualClock },
  warnings: string[] = [],
): Promise<ConfinedBrowser> {
  const b = await ConfinedBrowser.launch({
    chromiumPath: CHROMIUM,
    allowedHosts: [`idp.localhost:${site.port}`],
    startUrl: `http://idp.localhost:${site.port}/hello`,
    viewport: { width: 400, height: 300 },
    onFrame: () => {},
    log: { warn: (m) => warnings.push(m) },
    ...extra,
  });
  launched.push(b);
  return b;
}

/** The browser process itself (not a renderer or helper). */
function browserRoot(b: ConfinedBrowser): number {
  const pid = b.pids().find((p) => {
    const argv = cmdlineOf(p).split("\0");
    return argv.includes("--remote-debugging-pipe") && !argv.some((a) => a.startsWith("--type="));
  });
  if (pid === undefined) throw new Error("no browser process");
  return pid;
}

describe("ConfinedBrowser settings", () => {
  it("gives Chromium the PATH its options name, never the broker's own", async () => {
    const searchPath = `/usr/bin:/bin:/opt/slaude-test-${process.pid}`;
    expect(process.env.PATH).not.toBe(searchPath);
    const b = await launch({ searchPath });
    // The browser process's own environment (its children may clear theirs).
    expect(envOf(browserRoot(b)).PATH).toBe(searchPath);
  });

  it("waits out the close grace period on its clock, then kills a browser that hangs on close", async () => {
    const clock = new ManualClock();
    const warnings: string[] = [];
    const b = await launch({ clock }, warnings);
    const pids = b.pids();
    process.kill(browserRoot(b), "SIGSTOP");
    const closed = b.close();
    // The grace timer is armed on the clock: nothing is killed until the clock says time is up.
    await expect.poll(() => clock.pendingTimers(), { timeout: 20_000 }).toBe(1);
    expect(pids.filter(isAlive)).toEqual(pids);
    clock.advance(3_000);
    await closed;
    expect(pids.filter(isAlive)).toEqual([]);
    expect(warnings).toContain("login browser did not close in time; killing its processes");
  });
});
