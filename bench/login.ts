// npm run bench:login — the login live view, measured end to end with real Chromium on both sides:
// link open → first frame (p50/p95), input event → changed frame, and Chromium processes and PSS
// per login, with the spare browser (SLAUDE_LOGIN_SPARE_BROWSERS=1, warm before each login) and
// without it (every login starts its own Chromium). The two brokers run side by side and the runs
// alternate, so both see the same machine load; the load average is printed with the figures.
// BENCH_LOGIN_RUNS sets the runs per mode (default 10); --json prints the figures as JSON.
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { type Browser, chromium } from "playwright-core";
import { type RunningApp, startApp } from "../src/app/app.js";
import { loadConfig } from "../src/config/env.js";
import { parseRegistry, type ServiceRegistry } from "../src/config/registry.js";
import { createLogger } from "../src/log/logger.js";
import { type ChromiumLogins, chromiumLogins } from "../src/login/browser/browser-factory.js";
import type { LoginBrowserFactory } from "../src/login/login-service.js";
import { centerOf, LOGIN_LAYOUT, startFakeIdp } from "../test/fixtures/idp/fake-idp.js";
import { pct } from "./lib/stats.js";

const CHROMIUM = process.env.SLAUDE_CHROMIUM_PATH ?? "/usr/bin/chromium";
const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
const RUNS = Number(process.env.BENCH_LOGIN_RUNS ?? 10);
const JSON_OUT = process.argv.includes("--json");
const MODES = ["spare", "cold"] as const;
type Mode = (typeof MODES)[number];

interface Samples {
  firstFrame: number[];
  inputToFrame: number[];
  procs: number[];
  pssMb: number[];
}

/** One broker under test: the app, its login browsers, and the pids of the browser of the login running now. */
interface Rig {
  readonly app: RunningApp;
  readonly browsers: ChromiumLogins;
  current: { pids(): number[] } | undefined;
}

function pssKb(pid: number): number {
  try {
    const m = /^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

async function startRig(mode: Mode, dir: string, registry: ServiceRegistry): Promise<Rig> {
  const data = path.join(dir, mode);
  const homes = path.join(data, "login-browsers-bench");
  const config = loadConfig({
    NODE_ENV: "test",
    SLAUDE_DATA_DIR: data,
    PORT: "0",
    SLAUDE_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
    SLAUDE_PUBLIC_URL: "http://slaude.test",
    SLAUDE_LOGIN_SPARE_BROWSERS: mode === "spare" ? "1" : "0",
    PATH: process.env.PATH ?? "",
  });
  mkdirSync(homes, { recursive: true });
  const log = createLogger("error");
  // The production login browsers, wrapped only to see which processes belong to the login running now.
  const browsers = chromiumLogins({
    chromiumPath: CHROMIUM,
    log,
    homesDir: homes,
    searchPath: config.childBaseEnv.PATH,
    spareBrowsers: config.login.spareBrowsers,
    registry: () => registry,
  });
  const seen: { current: Rig["current"] } = { current: undefined };
  const factory: LoginBrowserFactory = async (req) => {
    const b = await browsers.browsers(req);
    // The production factory returns a ConfinedBrowser, which lists its processes.
    seen.current = b as unknown as { pids(): number[] };
    return b;
  };
  const app = await startApp({ browsers: factory, log, config, registry });
  return {
    app,
    browsers,
    get current() {
      return seen.current;
    },
    set current(v) {
      seen.current = v;
    },
  };
}

async function oneLogin(rig: Rig, viewer: Browser, into: Samples): Promise<void> {
  const link = await rig.app.logins.mint({
    teamId: "T1",
    channelId: "C1",
    threadTs: "1700000000.000100",
    userId: "UBENCH01",
    service: "idp",
  });
  const ctx = await viewer.newContext({ viewport: { width: 1100, height: 900 } });
  const page = await ctx.newPage();
  try {
    const t0 = performance.now();
    await page.goto(rig.app.url + new URL(link.url).pathname);
    await page.waitForSelector("#screen.live", { timeout: 60_000 });
    into.firstFrame.push(performance.now() - t0);
    // Let the page settle, then time one click to the first frame that differs.
    await page.waitForTimeout(500);
    const before = await page.getAttribute("#screen", "src");
    const box = (await page.locator("#screen").boundingBox())!;
    const at = centerOf(LOGIN_LAYOUT.username);
    const t1 = performance.now();
    await page.mouse.click(box.x + at.x, box.y + at.y);
    type Doc = { document: { querySelector(s: string): { getAttribute(n: string): string | null } | null } };
    await page.waitForFunction(
      (b) => (globalThis as unknown as Doc).document.querySelector("#screen")?.getAttribute("src") !== b,
      before,
      { timeout: 20_000, polling: "raf" },
    );
    into.inputToFrame.push(performance.now() - t1);
    const pids = rig.current?.pids() ?? [];
    into.procs.push(pids.length);
    into.pssMb.push(pids.reduce((n, p) => n + pssKb(p), 0) / 1024);
    await page.click("#cancel");
  } finally {
    await ctx.close();
  }
  // The login's browser is gone before the next one starts; with the spare, a new spare is warm.
  const gone = rig.current;
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline && (gone?.pids().length ?? 0) > 0) await new Promise((r) => setTimeout(r, 50));
  rig.current = undefined;
  await rig.browsers.sparesReady();
}

function summary(s: Samples): Record<string, number> {
  return {
    firstFrameP50: pct(s.firstFrame, 50),
    firstFrameP95: pct(s.firstFrame, 95),
    firstFrameMin: Math.min(...s.firstFrame),
    firstFrameMax: Math.max(...s.firstFrame),
    inputToFrameP50: pct(s.inputToFrame, 50),
    inputToFrameP95: pct(s.inputToFrame, 95),
    procsP50: pct(s.procs, 50),
    pssMbP50: pct(s.pssMb, 50),
    pssMbMin: Math.min(...s.pssMb),
    pssMbMax: Math.max(...s.pssMb),
  };
}

async function main(): Promise<void> {
  const idp = await startFakeIdp();
  const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-bench-login-"));
  const registry = parseRegistry(
    {
      services: {
        idp: {
          transport: { type: "stdio", command: "true", credentialEnv: { C: "{{cookie_header}}" } },
          capture: { strategy: "cookie", startUrl: `${idp.url}/login`, requiredCookies: ["idp_session"] },
          loginDomains: [new URL(idp.url).host],
        },
      },
    },
    "bench",
  );
  const load0 = os.loadavg();
  const rigs = new Map<Mode, Rig>();
  const samples = new Map<Mode, Samples>(
    MODES.map((m) => [m, { firstFrame: [], inputToFrame: [], procs: [], pssMb: [] }]),
  );
  const viewer = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
  try {
    for (const m of MODES) rigs.set(m, await startRig(m, dir, registry));
    // One warm-up login per mode (first use loads playwright-core and the page assets), not counted.
    for (const m of MODES)
      await oneLogin(rigs.get(m)!, viewer, { firstFrame: [], inputToFrame: [], procs: [], pssMb: [] });
    for (let i = 0; i < RUNS; i++)
      for (const m of i % 2 ? [...MODES].reverse() : MODES) await oneLogin(rigs.get(m)!, viewer, samples.get(m)!);
  } finally {
    await viewer.close();
    for (const rig of rigs.values()) {
      await rig.app.close();
      await rig.browsers.close();
    }
    await idp.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const load1 = os.loadavg();
  const results = Object.fromEntries(MODES.map((m) => [m, summary(samples.get(m)!)]));
  if (JSON_OUT) {
    process.stdout.write(
      `${JSON.stringify({ runs: RUNS, loadavgBefore: load0, loadavgAfter: load1, cpus: os.cpus().length, results }, null, 2)}\n`,
    );
    return;
  }
  const f = (x: number | undefined) => (x ?? Number.NaN).toFixed(0).padStart(6);
  const lines = [
    `login live view: ${RUNS} logins per mode, alternating, real Chromium on both sides; ${os.cpus().length} CPUs, load average ${load0[0]!.toFixed(1)} before, ${load1[0]!.toFixed(1)} after`,
  ];
  for (const m of MODES) {
    const r = results[m]!;
    lines.push(
      `  ${m === "spare" ? "with the spare (warm)" : "without the spare   "}  link open → first frame p50 ${f(r.firstFrameP50)} ms  p95 ${f(r.firstFrameP95)} ms  (min ${f(r.firstFrameMin)}, max ${f(r.firstFrameMax)})`,
      `                         input → changed frame   p50 ${f(r.inputToFrameP50)} ms  p95 ${f(r.inputToFrameP95)} ms`,
      `                         Chromium processes ${f(r.procsP50)}   PSS ${f(r.pssMbP50)} MB (min ${f(r.pssMbMin)}, max ${f(r.pssMbMax)})`,
    );
  }
  const s = results.spare!;
  lines.push(
    `  ${s.firstFrameP50! <= 800 ? "PASS" : "FAIL"} link open → first frame p50 with the spare ≤ 800 ms (${f(s.firstFrameP50)} ms)`,
    `  ${s.inputToFrameP50! <= 100 ? "PASS" : "FAIL"} input → changed frame p50 ≤ 100 ms (${f(s.inputToFrameP50)} ms)`,
  );
  process.stdout.write(`${lines.join("\n")}\n`);
}

await main();
