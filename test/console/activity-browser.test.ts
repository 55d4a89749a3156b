import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import type { AuditEvent } from "../../src/audit/event.js";
import { demoRegistry } from "../../src/config/demo-registry.js";
import { runBin } from "../cli/run.js";
import { testAppConfig } from "../support/app-config.js";
import { ARTIFACTS, CHROMIUM, CHROMIUM_FLAGS } from "./serve.js";

// The Activity tab in a real browser: planted call rows of the console's team are drawn as SVG
// bars and latency points, a call recorded while the tab is open shows without a reload, and the
// figures on the page are the ones `slaude-connect stats --team` prints from the same store.

const TEAM = "T_LOCAL";
const WAIT = 30_000;
const MIN = 60_000;
let dir: string;
let app: RunningApp;
let browser: Browser;
let link: string;

function calls(now: number): AuditEvent[] {
  const row = (ago: number, e: Partial<AuditEvent>): AuditEvent => ({
    at: now - ago,
    event: "call",
    teamId: TEAM,
    service: "demo",
    ...e,
  });
  return [
    row(3 * MIN, { decision: "own", durationMs: 40 }),
    row(3 * MIN, { event: "call_started", decision: "own", durationMs: null }),
    row(3 * MIN, { decision: "grant", durationMs: 90 }),
    row(2 * MIN, { event: "call_denied", decision: "needs_connect", errorCode: "needs_connect", durationMs: 1 }),
    row(2 * MIN, { decision: "approval_once", durationMs: 2400 }),
    row(MIN, { decision: "own", errorCode: "vendor_error", durationMs: 15 }),
    // Another team's call is not this console's.
    row(MIN, { teamId: "T_OTHER", decision: "own", durationMs: 7 }),
  ];
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-console-activity-"));
  app = await startApp({
    config: testAppConfig(dir, `host-token-${"a".repeat(24)}`, { SLAUDE_WORKSPACE: "local" }),
    registry: demoRegistry(),
  });
  link = /http:\/\/127\.0\.0\.1:\d+\/console\/\?token=[A-Za-z0-9_-]{43}(?=\s)/.exec(app.banner)![0];
  await app.store.audit.append(calls(Date.now()));
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_FLAGS });
  mkdirSync(ARTIFACTS, { recursive: true });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await app?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function openActivity(width: number, height: number): Promise<Page> {
  const context = await browser.newContext({ viewport: { width, height } });
  const page = await context.newPage();
  await page.goto(link);
  await page
    .getByRole("status")
    .filter({ hasText: /^Live$/ })
    .waitFor({ timeout: WAIT });
  await page.getByRole("tab", { name: "Activity" }).click();
  await page
    .getByRole("tabpanel", { name: "Activity" })
    .getByRole("img", { name: /^Calls per minute by outcome/ })
    .waitFor({ timeout: WAIT });
  return page;
}

describe("console Activity tab in Chromium", () => {
  it("draws the hour's calls and latency, updates live, and agrees with slaude-connect stats", async () => {
    const page = await openActivity(1280, 800);
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    const panel = page.getByRole("tabpanel", { name: "Activity" });
    const summary = panel.locator("#activity-summary");
    await expect
      .poll(() => summary.textContent(), { timeout: WAIT })
      .toBe("5 calls in the last 60 minutes: own 1, borrowed 2, refused 1, failed 1");
    expect(await panel.locator("#activity-latency-line").textContent()).toBe(
      "Latency: p50 40 ms, p95 2400 ms (4 calls)",
    );
    // One bar segment per minute and outcome that had calls; one p50 and one p95 point per timed minute.
    expect(await panel.locator('#activity-calls rect[data-outcome="borrowed"]').count()).toBe(2);
    expect(await panel.locator("#activity-calls rect[data-outcome]").count()).toBe(5);
    expect(await panel.locator('#activity-latency circle[data-series="p95Ms"]').count()).toBe(3);
    expect(await panel.getByRole("img", { name: /^Latency per minute/ }).count()).toBe(1);
    await page.screenshot({ path: path.join(ARTIFACTS, "console-activity-1280x800.png") });

    // A call recorded now reaches the open tab through the event stream, without a reload.
    await app.store.audit.append([
      { at: Date.now(), event: "call", teamId: TEAM, service: "demo", decision: "own", durationMs: 30 },
    ]);
    await expect
      .poll(() => summary.textContent(), { timeout: WAIT })
      .toBe("6 calls in the last 60 minutes: own 2, borrowed 2, refused 1, failed 1");
    const pageLatency = await panel.locator("#activity-latency-line").textContent();
    expect(pageLatency).toBe("Latency: p50 40 ms, p95 2400 ms (5 calls)");

    // The operator's text: the same store, the same team, the same figures.
    const cli = await runBin(["stats", "--team", TEAM], {
      NODE_ENV: "test",
      SLAUDE_DATA_DIR: dir,
      SLAUDE_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
    });
    expect(cli.code, cli.stderr).toBe(0);
    const lines = cli.stdout.split("\n");
    expect(lines[0]).toMatch(/\(60 minutes\), team T_LOCAL: 6$/);
    expect(lines[1]).toBe("  own 2, borrowed 2, refused 1, failed 1");
    expect(lines[2]).toBe(pageLatency);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 120_000);

  it("fits a phone's width", async () => {
    const page = await openActivity(390, 844);
    const body = page.locator("#activity-body");
    await body.locator("#activity-summary").waitFor({ timeout: WAIT });
    const { scroll, client } = await body.evaluate((e) => ({ scroll: e.scrollWidth, client: e.clientWidth }));
    expect(scroll).toBeLessThanOrEqual(client);
    await page.screenshot({ path: path.join(ARTIFACTS, "console-activity-390x844.png") });
    await page.context().close();
  }, 60_000);
});
