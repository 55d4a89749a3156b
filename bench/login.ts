// npm run bench:login — the login live view, measured end to end with real Chromium on both sides:
// link open → first frame, input event → changed frame, and Chromium processes and memory per login.
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { chromium } from "playwright-core";
import { startApp } from "../src/app/app.js";
import { loadConfig } from "../src/config/env.js";
import { parseRegistry } from "../src/config/registry.js";
import { chromiumBrowsers } from "../src/login/browser/browser-factory.js";
import type { LoginBrowserFactory } from "../src/login/login-service.js";
import { createLogger } from "../src/log/logger.js";
import { centerOf, LOGIN_LAYOUT, startFakeIdp } from "../test/fixtures/idp/fake-idp.js";

const CHROMIUM = process.env.SLAUDE_CHROMIUM_PATH ?? "/usr/bin/chromium";
const FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];
const RUNS = Number(process.env.BENCH_LOGIN_RUNS ?? 5);

function rssKb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

async function main(): Promise<void> {
  const idp = await startFakeIdp();
  const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-bench-login-"));
  let current: { pids(): number[] } | undefined;
  const browsers: LoginBrowserFactory = async (req) => {
    const b = await chromiumBrowsers({ chromiumPath: CHROMIUM, log: createLogger("error") })(req);
    current = b as unknown as { pids(): number[] };
    return b;
  };
  const app = await startApp({
    browsers,
    log: createLogger("error"),
    config: loadConfig({ NODE_ENV: "test", SLAUDE_DATA_DIR: dir, PORT: "0", SLAUDE_ENCRYPTION_KEY: randomBytes(32).toString("base64"), SLAUDE_PUBLIC_URL: "http://slaude.test", PATH: process.env.PATH ?? "" }),
    registry: parseRegistry(
      { services: { idp: { transport: { type: "stdio", command: "true", credentialEnv: { C: "{{cookie_header}}" } }, capture: { strategy: "cookie", startUrl: `${idp.url}/login`, requiredCookies: ["idp_session"] }, loginDomains: [new URL(idp.url).host] } } },
      "bench",
    ),
  });
  const viewer = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
  const firstFrame: number[] = [];
  const inputToFrame: number[] = [];
  const procs: number[] = [];
  const rss: number[] = [];
  try {
    for (let i = 0; i < RUNS; i++) {
      const link = await app.logins.mint({ teamId: "T1", channelId: "C1", threadTs: "1700000000.000100", userId: "UBENCH01", service: "idp" });
      const page = await (await viewer.newContext({ viewport: { width: 1100, height: 900 } })).newPage();
      const t0 = performance.now();
      await page.goto(app.url + new URL(link.url).pathname);
      await page.waitForSelector("#screen.live", { timeout: 30_000 });
      firstFrame.push(performance.now() - t0);
      // Let the page settle, then time one click to the first frame that differs.
      await page.waitForTimeout(500);
      const before = await page.getAttribute("#screen", "src");
      const box = (await page.locator("#screen").boundingBox())!;
      const at = centerOf(LOGIN_LAYOUT.username);
      const t1 = performance.now();
      await page.mouse.click(box.x + at.x, box.y + at.y);
      type Doc = { document: { querySelector(s: string): { getAttribute(n: string): string | null } | null } };
      await page.waitForFunction((b) => (globalThis as unknown as Doc).document.querySelector("#screen")?.getAttribute("src") !== b, before, { timeout: 10_000 });
      inputToFrame.push(performance.now() - t1);
      const pids = current?.pids() ?? [];
      procs.push(pids.length);
      rss.push(pids.reduce((n, p) => n + rssKb(p), 0) / 1024);
      await page.click("#cancel");
      await page.context().close();
      await new Promise((r) => setTimeout(r, 300));
    }
  } finally {
    await viewer.close();
    await app.close();
    await idp.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const f = (x: number) => x.toFixed(0).padStart(7);
  process.stdout.write(
    [
      `login live view (median of ${RUNS}, real Chromium on both sides)`,
      `  link open → first frame          ${f(median(firstFrame))} ms   (min ${f(Math.min(...firstFrame))}, max ${f(Math.max(...firstFrame))})`,
      `  input event → changed frame      ${f(median(inputToFrame))} ms   (min ${f(Math.min(...inputToFrame))}, max ${f(Math.max(...inputToFrame))})`,
      `  Chromium processes per login     ${f(median(procs))}`,
      `  Chromium RSS per login (sum)     ${f(median(rss))} MB`,
    ].join("\n") + "\n",
  );
}

await main();
