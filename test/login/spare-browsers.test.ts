// The spare login browser (issue 13, item 6): a Chromium started before its login is known, handed
// to exactly one login, replaced in the background, never handed out twice, swept after a crash and
// killed on shutdown. Real Chromium, processes and homes seen in /proc and on disk; nothing skips.
// (The confinement suite runs on spares too: test/login/browser/confined-browser.test.ts.)
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { startApp } from "../../src/app/app.js";
import { systemClock } from "../../src/clock/clock.js";
import { loadConfig } from "../../src/config/env.js";
import { parseRegistry } from "../../src/config/registry.js";
import { createLogger } from "../../src/log/logger.js";
import { chromiumLogins } from "../../src/login/browser/browser-factory.js";
import { BrowserHomes } from "../../src/login/browser/browser-homes.js";
import { ConfinedBrowser } from "../../src/login/browser/confined-browser.js";
import { type BrowserPid, findBrowserPid } from "../../src/login/browser/process-tree.js";
import { SpareBrowsers } from "../../src/login/browser/spare-browsers.js";
import { cmdlineOf, envOf, isAlive, processesReferencing } from "../support/proc.js";
import { html, type Site, startSite } from "./browser/test-site.js";

const CHROMIUM = "/usr/bin/chromium";
// Real Chromium on a loaded shared machine: generous bounds, no timed assertions.
vi.setConfig({ testTimeout: 240_000 });
const WAIT = { timeout: 120_000, interval: 50 };

let site: Site;
let homes: string;
const pools: SpareBrowsers[] = [];
const launched: ConfinedBrowser[] = [];

beforeAll(async () => {
  site = await startSite(() => ({ "/hello": html("<h1>Sign in</h1>") }));
});
afterAll(async () => {
  await site?.close();
});
afterEach(async () => {
  await Promise.all(launched.splice(0).map((b) => b.close()));
  await Promise.all(pools.splice(0).map((p) => p.close()));
  rmSync(homes, { recursive: true, force: true });
});

function pool(resolvable: string[] = ["idp.localhost"], size = 1): SpareBrowsers {
  homes = mkdtempSync(path.join(os.tmpdir(), "slaude-spare-"));
  const p = new SpareBrowsers({
    size,
    chromiumPath: CHROMIUM,
    resolvableHosts: () => resolvable,
    homesDir: homes,
    clock: systemClock,
    log: { warn: () => {} },
  });
  pools.push(p);
  p.fill();
  return p;
}

async function login(spares: SpareBrowsers): Promise<{ browser: ConfinedBrowser; frames: () => number }> {
  let frames = 0;
  const browser = await ConfinedBrowser.launch({
    chromiumPath: CHROMIUM,
    allowedHosts: [`idp.localhost:${site.port}`],
    startUrl: `http://idp.localhost:${site.port}/hello`,
    viewport: { width: 400, height: 300 },
    onFrame: () => frames++,
    spares,
  });
  launched.push(browser);
  return { browser, frames: () => frames };
}

/** The browser processes running from homes under `dir`, by home. */
function runningIn(dir: string): Map<string, BrowserPid> {
  const out = new Map<string, BrowserPid>();
  for (const name of existsSync(dir) ? readdirSync(dir) : []) {
    const home = path.join(dir, name);
    const pid = findBrowserPid(home);
    if (pid) out.set(home, pid);
  }
  return out;
}

/** The one spare running under `dir` other than those in `except`; throws (for vi.waitFor) until there is one. */
function spareIn(dir: string, except: ReadonlySet<string> = new Set()): { home: string; pid: BrowserPid } {
  const found = [...runningIn(dir)].filter(([home]) => !except.has(home));
  if (found.length !== 1) throw new Error(`${found.length} spares running`);
  const [home, pid] = found[0]!;
  return { home, pid };
}

/** What tells one login's browser apart: its process, its HOME and its profile directory. */
function identity(b: ConfinedBrowser): { pid: number; home: string; profile: string } {
  for (const pid of b.pids()) {
    const argv = cmdlineOf(pid).split("\0");
    const profile = argv.find((a) => a.startsWith("--user-data-dir="));
    if (profile && !argv.some((a) => a.startsWith("--type=")))
      return { pid, home: envOf(pid).HOME ?? "", profile: profile.slice("--user-data-dir=".length) };
  }
  throw new Error("no browser process");
}

describe("spare login browsers", () => {
  it("hands the spare to the next login, which runs on it, and starts a replacement", async () => {
    const spares = pool();
    const spare = await vi.waitFor(() => spareIn(homes), WAIT);
    const { browser, frames } = await login(spares);
    expect(identity(browser)).toMatchObject({ pid: spare.pid.pid, home: spare.home });
    await vi.waitFor(() => expect(frames()).toBeGreaterThan(0), WAIT);
    const next = await vi.waitFor(() => spareIn(homes, new Set([spare.home])), WAIT);
    expect(next.pid.pid).not.toBe(spare.pid.pid);
    expect(spares.size).toBe(1);
  });

  it("never hands a used browser out again: each login gets another process, HOME and profile, and a closed one is gone", async () => {
    const spares = pool();
    await vi.waitFor(() => spareIn(homes), WAIT);
    const a = await login(spares);
    const idA = identity(a.browser);
    const pidsA = a.browser.pids();
    // Two more logins, one while A still runs and one after it closed: neither may get A's browser.
    const b = await login(spares);
    await a.browser.close();
    const c = await login(spares);
    const ids = [idA, identity(b.browser), identity(c.browser)];
    for (const key of ["pid", "home", "profile"] as const) expect(new Set(ids.map((i) => i[key])).size).toBe(3);
    // Every one of them ran on a spare (its HOME under the pool's homes), not on a cold start.
    expect(ids.every((i) => path.dirname(i.home) === homes)).toBe(true);
    expect(pidsA.filter(isAlive)).toEqual([]);
    expect([idA.home, idA.profile].filter((d) => existsSync(d))).toEqual([]);
  });

  it("starts a login cold, keeping the spare, when the spare's resolver rules do not cover the login's hosts", async () => {
    const spares = pool(["other.localhost"]);
    const spare = await vi.waitFor(() => spareIn(homes), WAIT);
    const { browser } = await login(spares);
    expect(path.dirname(identity(browser).home)).not.toBe(homes);
    expect(spareIn(homes)).toEqual(spare);
    expect(spares.size).toBe(1);
  });

  it("kills spares on close, one still starting included, and leaves no process or home behind", async () => {
    const spares = pool(["idp.localhost"], 2);
    // Closed at once: both are still starting; close waits for them and kills them.
    await spares.close();
    expect(processesReferencing([homes])).toEqual([]);
    expect(readdirSync(homes)).toEqual([]);
    expect(spares.size).toBe(0);
    spares.fill();
    expect(spares.size).toBe(0);
  });

  it("sweeps the spares of a broker that died without closing them", async () => {
    pool(["idp.localhost"], 2);
    await vi.waitFor(() => expect(runningIn(homes).size).toBe(2), WAIT);
    const killed = await new BrowserHomes(homes).sweep();
    expect(killed).toBeGreaterThanOrEqual(2);
    expect(processesReferencing([homes])).toEqual([]);
    expect(readdirSync(homes)).toEqual([]);
  });
});

describe("spare browsers in the broker", () => {
  const env = (extra: Record<string, string>) => ({
    NODE_ENV: "test",
    SLAUDE_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString("base64"),
    ...extra,
  });

  it("keeps SLAUDE_LOGIN_SPARE_BROWSERS spares (default 1), none when SLAUDE_LOGIN_MAX_CONCURRENT is 0", async () => {
    expect(loadConfig(env({})).login.spareBrowsers).toBe(1);
    expect(loadConfig(env({ SLAUDE_LOGIN_SPARE_BROWSERS: "0" })).login.spareBrowsers).toBe(0);
    expect(loadConfig(env({ SLAUDE_LOGIN_MAX_CONCURRENT: "0", SLAUDE_LOGIN_SPARE_BROWSERS: "2" })).login).toMatchObject(
      { maxConcurrent: 0, spareBrowsers: 0 },
    );
    expect(
      loadConfig(env({ SLAUDE_LOGIN_MAX_CONCURRENT: "1", SLAUDE_LOGIN_SPARE_BROWSERS: "3" })).login.spareBrowsers,
    ).toBe(1);
    expect(() => loadConfig(env({ SLAUDE_LOGIN_SPARE_BROWSERS: "5" }))).toThrow(/SLAUDE_LOGIN_SPARE_BROWSERS/);
    homes = mkdtempSync(path.join(os.tmpdir(), "slaude-spare-"));
    const registry = parseRegistry(
      {
        services: {
          idp: {
            transport: { type: "stdio", command: "true", credentialEnv: { TOKEN: "{{token}}" } },
            capture: { strategy: "paste", fields: [{ name: "token", label: "Token" }] },
            loginDomains: ["idp.localhost"],
          },
        },
      },
      "test",
    );
    const counts: number[] = [];
    for (const vars of [{ SLAUDE_LOGIN_MAX_CONCURRENT: "0" }, {}]) {
      const logins = chromiumLogins({
        chromiumPath: CHROMIUM,
        log: createLogger("error"),
        homesDir: homes,
        spareBrowsers: loadConfig(env(vars)).login.spareBrowsers,
        registry: () => registry,
      });
      counts.push(logins.spareCount());
      await logins.close();
    }
    expect(counts).toEqual([0, 1]);
    expect(processesReferencing([homes])).toEqual([]);
  });

  it("starts its spare in the data dir's login-browsers (where the start-up sweep looks) and leaves no Chromium after shutdown", async () => {
    homes = mkdtempSync(path.join(os.tmpdir(), "slaude-spare-app-"));
    const registry = parseRegistry(
      {
        services: {
          idp: {
            transport: { type: "stdio", command: "true", credentialEnv: { C: "{{cookie_header}}" } },
            capture: {
              strategy: "cookie",
              startUrl: `http://idp.localhost:${site.port}/hello`,
              requiredCookies: ["sid"],
            },
          },
        },
      },
      "test",
    );
    const app = await startApp({
      log: createLogger("error"),
      registry,
      config: loadConfig(
        env({
          SLAUDE_DATA_DIR: homes,
          PORT: "0",
          SLAUDE_CHROMIUM_PATH: CHROMIUM,
          PATH: process.env.PATH ?? "/usr/bin:/bin",
        }),
      ),
    });
    const browsersDir = path.join(homes, "login-browsers");
    let pids: number[] = [];
    try {
      const spare = await vi.waitFor(() => spareIn(browsersDir), WAIT);
      // The browser process shows first; its zygotes and services follow.
      pids = await vi.waitFor(() => {
        const p = processesReferencing([spare.home]);
        expect(p.length).toBeGreaterThan(1);
        return p;
      }, WAIT);
    } finally {
      await app.close();
    }
    expect(pids.filter(isAlive)).toEqual([]);
    expect(processesReferencing([browsersDir])).toEqual([]);
    expect(readdirSync(browsersDir)).toEqual([]);
  });
});
