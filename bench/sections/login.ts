import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { parseRegistry } from "../../src/config/registry.js";
import { LOGIN_STEPS, LOGIN_TRACE, type LoginStep, type LoginTraceEvent } from "../../src/login/trace.js";
import { centerOf, LOGIN_LAYOUT, startFakeIdp } from "../../test/fixtures/idp/fake-idp.js";
import { pct } from "../lib/stats.js";
import { pssKb, type Rig, startRig } from "./login-rig.js";
import { recordViewer, viewerRecord, waitFrames } from "./login-viewer.js";

export const LOGIN_MODES = ["warm", "cold", "nospare"] as const;
export type LoginMode = (typeof LOGIN_MODES)[number];
/** The split's steps: the broker's trace, then the viewer's own. */
export type SplitStep = LoginStep | "viewer_page_ready" | "first_frame_drawn";

export interface LoginBenchOptions {
  readonly runs: number;
  readonly modes?: readonly LoginMode[];
  readonly chromiumPath?: string;
  /** Progress lines (default: none). */
  readonly say?: (line: string) => void;
}

/** p50, p95, min, max and count of one figure. */
export interface Stat {
  readonly p50: number;
  readonly p95: number;
  readonly min: number;
  readonly max: number;
  readonly n: number;
}

export interface LoginModeFigures {
  readonly firstFrame: Stat;
  /** Logins whose first frame was (near) all white. */
  readonly blankFirstFrames: number;
  /** Median ms from the link's goto to each step (steps never seen are left out). */
  readonly split: Partial<Record<SplitStep, number>>;
  readonly inputIdle: Stat;
  readonly inputRefilling: Stat;
  readonly procs: Stat;
  readonly pssMb: Stat;
}

export interface LoginFigures {
  readonly runs: number;
  readonly cpus: number;
  readonly loadavgBefore: readonly number[];
  readonly loadavgAfter: readonly number[];
  readonly modes: Partial<Record<LoginMode, LoginModeFigures>>;
}

interface Samples {
  firstFrame: number[];
  blank: number;
  split: Map<SplitStep, number[]>;
  inputIdle: number[];
  inputRefilling: number[];
  procs: number[];
  pssMb: number[];
}

const FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"];

function stat(xs: readonly number[]): Stat {
  return {
    p50: pct(xs, 50),
    p95: pct(xs, 95),
    min: xs.length ? Math.min(...xs) : Number.NaN,
    max: xs.length ? Math.max(...xs) : Number.NaN,
    n: xs.length,
  };
}

/** Which steps of the broker's trace happened, first time each, since `reset()`. */
class TraceLog {
  private seen = new Map<LoginStep, number>();
  /** Whether a spare is being started now (from its refill_started until the pool is ready). */
  refilling = false;
  /** Resolves once the spares held now have started (the rig of the login running now). */
  sparesReady: () => Promise<unknown> = async () => {};
  private readonly fn = (m: unknown) => {
    const e = m as LoginTraceEvent;
    if (!this.seen.has(e.step)) this.seen.set(e.step, e.at);
    if (e.step !== "refill_started") return;
    this.refilling = true;
    // Published just before the spare joins the pool: ask once it is there.
    setImmediate(() => void this.sparesReady().then(() => (this.refilling = false)));
  };
  constructor() {
    subscribe(LOGIN_TRACE, this.fn);
  }
  reset(): void {
    this.seen = new Map();
  }
  get(step: LoginStep): number | undefined {
    return this.seen.get(step);
  }
  close(): void {
    unsubscribe(LOGIN_TRACE, this.fn);
  }
}

/** A viewer epoch time on this process's performance.now() scale. */
const local = (epoch: number | undefined) => (epoch === undefined ? undefined : epoch - performance.timeOrigin);

/** Clicks the screen at `at` once its frames are quiet; ms to the first frame that follows. */
async function click(page: Page, at: { x: number; y: number }, trace: TraceLog, into: Samples): Promise<void> {
  const box = (await page.locator("#screen").boundingBox())!;
  // A page still drawing (a caret, a late paint) would pass for the input's frame.
  for (let i = 0; i < 40; i++) {
    const last = (await viewerRecord(page)).frames.at(-1);
    if (last === undefined || performance.now() - local(last)! > 120) break;
    await page.waitForTimeout(30);
  }
  const n = (await viewerRecord(page)).frames.length;
  const refilling = trace.refilling;
  const t1 = performance.now();
  await page.mouse.click(box.x + at.x, box.y + at.y);
  const r = await waitFrames(page, n, 20_000);
  const next = r.frames.map(local).find((t) => t! > t1);
  if (next !== undefined) (refilling ? into.inputRefilling : into.inputIdle).push(next - t1);
}

/** Resolves once `ok()` holds, polling; false after `ms`. */
async function until(ok: () => boolean, ms: number): Promise<boolean> {
  const end = performance.now() + ms;
  while (!ok() && performance.now() < end) await new Promise((res) => setTimeout(res, 10));
  return ok();
}

async function oneLogin(rig: Rig, page: Page, trace: TraceLog, into: Samples): Promise<void> {
  const link = await rig.app.logins.mint({
    teamId: "T1",
    channelId: "C1",
    threadTs: "1700000000.000100",
    userId: "UBENCH01",
    service: "idp",
  });
  trace.reset();
  trace.refilling = false;
  trace.sparesReady = () => rig.browsers.sparesReady();
  const t0 = performance.now();
  await page.goto(rig.app.url + new URL(link.url).pathname);
  const r = await waitFrames(page, 0, 60_000);
  const drawn = local(r.firstDrawn)!;
  into.firstFrame.push(drawn - t0);
  if ((r.firstInk ?? 0) < 0.002) into.blank++;
  // The first inputs right away, then one as soon as the spare's refill runs, then one once it is done.
  // Each click focuses the other field, so each one changes the page.
  const fields = [centerOf(LOGIN_LAYOUT.username), centerOf(LOGIN_LAYOUT.password)];
  let k = 0;
  const next = () => click(page, fields[k++ % 2]!, trace, into);
  await next();
  await next();
  if (await until(() => trace.refilling, 15_000)) await next();
  await rig.browsers.sparesReady();
  await until(() => !trace.refilling, 5_000);
  await next();
  const put = (s: SplitStep, at: number | undefined) => {
    if (at !== undefined) into.split.get(s)?.push(at - t0) ?? into.split.set(s, [at - t0]);
  };
  put("viewer_page_ready", local(r.pageReady));
  for (const s of LOGIN_STEPS) put(s, trace.get(s));
  put("first_frame_drawn", drawn);
  const pids = rig.current?.pids() ?? [];
  into.procs.push(pids.length);
  into.pssMb.push(pids.reduce((n, p) => n + pssKb(p), 0) / 1024);
  await page.click("#cancel");
  await page.waitForSelector('#status[data-state="cancelled"]', { timeout: 20_000 });
  // The login's browser is gone before the next one starts, and the spare is warm again.
  const gone = rig.current;
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline && (gone?.pids().length ?? 0) > 0) await new Promise((res) => setTimeout(res, 50));
  rig.current = undefined;
  await rig.browsers.sparesReady();
}

const emptySamples = (): Samples => ({
  firstFrame: [],
  blank: 0,
  split: new Map(),
  inputIdle: [],
  inputRefilling: [],
  procs: [],
  pssMb: [],
});

/** Runs `runs` logins per mode (alternating), after one uncounted warm-up login per mode. */
export async function measureLogin(o: LoginBenchOptions): Promise<LoginFigures> {
  const modes = o.modes ?? ["warm", "cold"];
  const chromiumPath = o.chromiumPath ?? process.env.SLAUDE_CHROMIUM_PATH ?? "/usr/bin/chromium";
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
  const loadavgBefore = os.loadavg();
  const trace = new TraceLog();
  const samples = new Map(modes.map((m) => [m, emptySamples()]));
  const rigs = new Map<boolean, Rig>();
  const warmTabs = new Map<LoginMode, { ctx: BrowserContext; page: Page }>();
  const viewer: Browser = await chromium.launch({ executablePath: chromiumPath, args: FLAGS });
  const tab = async () => {
    const ctx = await viewer.newContext({ viewport: { width: 1100, height: 900 } });
    await recordViewer(ctx);
    return { ctx, page: await ctx.newPage() };
  };
  const run = async (m: LoginMode, into: Samples) => {
    const spare = m !== "nospare";
    let rig = rigs.get(spare);
    if (!rig) {
      rig = await startRig(spare, dir, registry, chromiumPath);
      rigs.set(spare, rig);
    }
    if (m === "cold") {
      const t = await tab();
      try {
        await oneLogin(rig, t.page, trace, into);
      } finally {
        await t.ctx.close();
      }
      return;
    }
    let t = warmTabs.get(m);
    if (!t) {
      t = await tab();
      warmTabs.set(m, t);
    }
    await oneLogin(rig, t.page, trace, into);
  };
  try {
    // One uncounted login per mode: first use loads playwright-core, and warms the warm tabs.
    for (const m of modes) await run(m, emptySamples());
    for (let i = 0; i < o.runs; i++) {
      for (const m of i % 2 ? [...modes].reverse() : modes) await run(m, samples.get(m)!);
      o.say?.(`login bench: run ${i + 1}/${o.runs}`);
    }
  } finally {
    trace.close();
    await viewer.close();
    for (const rig of rigs.values()) {
      await rig.app.close();
      await rig.browsers.close();
    }
    await idp.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const figures: Partial<Record<LoginMode, LoginModeFigures>> = {};
  for (const [m, s] of samples)
    figures[m] = {
      firstFrame: stat(s.firstFrame),
      blankFirstFrames: s.blank,
      split: Object.fromEntries([...s.split].map(([k, v]) => [k, pct(v, 50)])),
      inputIdle: stat(s.inputIdle),
      inputRefilling: stat(s.inputRefilling),
      procs: stat(s.procs),
      pssMb: stat(s.pssMb),
    };
  return { runs: o.runs, cpus: os.cpus().length, loadavgBefore, loadavgAfter: os.loadavg(), modes: figures };
}
