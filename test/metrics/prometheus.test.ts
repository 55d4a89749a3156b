import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../../src/clock/clock.js";
import { parseRegistry } from "../../src/config/registry.js";
import { PeriodicJob } from "../../src/jobs/periodic-job.js";
import { memoryLogger } from "../../src/log/logger.js";
import { PrometheusMetrics } from "../../src/metrics/prometheus.js";
import { ALICE, BOB, fixtureRegistryDoc, type Harness, makeHarness, mcpCall } from "../integration/broker-harness.js";
import { type HeldLock, holdWriteLock } from "../support/db-lock.js";
import { until } from "../support/until.js";

// The metrics the core reports, read back through the real prom-client exposition: the real
// broker (SQLite file, pool, fixture vendor children), approvals clicked through the approval
// service, a second process holding the SQLite write lock.

const harnesses: Harness[] = [];
const locks: HeldLock[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const l of locks.splice(0)) await l.release();
  for (const h of harnesses.splice(0)) await h.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function setup(opts: Parameters<typeof makeHarness>[0] = {}) {
  const metrics = new PrometheusMetrics(parseRegistry(fixtureRegistryDoc(), "m"));
  const h = await makeHarness({ realClock: true, metrics, ...opts });
  harnesses.push(h);
  metrics.watch({ pool: () => h.broker.pool.stats(), approvalsPending: () => h.approvalService.pendingCount });
  const value = async (series: string): Promise<number | undefined> => {
    const line = (await metrics.text()).body.split("\n").find((l) => l.startsWith(`${series} `));
    return line === undefined ? undefined : Number(line.slice(series.length + 1));
  };
  return { h, metrics, value };
}

function gateFile(): string {
  const d = mkdtempSync(path.join(os.tmpdir(), "slaude-metrics-"));
  dirs.push(d);
  return path.join(d, "gate");
}

describe("Prometheus metrics from the broker core", () => {
  it("counts the approval pending while the borrower waits, then its decision latency and the borrowed call", async () => {
    const { h, value } = await setup();
    await h.connect(ALICE);
    const s = await h.session();
    s.turn.user = BOB;
    const pending = mcpCall(s.client, { tool: "read_item", args: { id: "1" }, on_behalf_of: BOB });
    const { approval } = await h.approvals.nextCard();
    expect(await value("slaude_approvals_pending")).toBe(1);
    expect(await h.approvalService.decide(approval.id, approval.nonce, ALICE, "allowed_once")).toBe("applied");
    expect((await pending).structured.ranAs).toBe("approval_once");
    expect(await value("slaude_approvals_pending")).toBe(0);
    expect(await value('slaude_approval_decision_seconds_count{decision="allowed_once"}')).toBe(1);
    expect(await value('slaude_calls_total{service="vendor",tool="read_item",outcome="ok",via="approval_once"}')).toBe(
      1,
    );
  });

  it("keeps the vendor's time apart from the broker's: a call held in the vendor shows up as vendor time only", async () => {
    const { h, value } = await setup();
    await h.connect(ALICE);
    const s = await h.session();
    // Warm the child so the held call pays no start-up.
    expect(
      (await mcpCall(s.client, { tool: "read_item", args: { id: "1" }, on_behalf_of: ALICE })).structured.status,
    ).toBe("ok");
    const vendor0 = (await value('slaude_call_vendor_seconds_sum{service="vendor"}'))!;
    const broker0 = (await value('slaude_call_broker_seconds_sum{service="vendor"}'))!;
    const gate = gateFile();
    const held = mcpCall(s.client, { tool: "wait_for_file", args: { path: gate }, on_behalf_of: ALICE });
    await until(async () => (await value('slaude_vendors{state="leased"}')) === 1);
    const heldFrom = performance.now();
    await new Promise((r) => setTimeout(r, 1_000)); // the hold being measured, not a wait for an outcome
    writeFileSync(gate, "");
    expect((await held).structured.status).toBe("ok");
    const heldS = (performance.now() - heldFrom) / 1000;
    const vendorDelta = (await value('slaude_call_vendor_seconds_sum{service="vendor"}'))! - vendor0;
    const brokerDelta = (await value('slaude_call_broker_seconds_sum{service="vendor"}'))! - broker0;
    expect(vendorDelta).toBeGreaterThanOrEqual(heldS - 0.05);
    expect(brokerDelta).toBeLessThan(heldS);
  });

  it("counts pool waits: one that got a slot and one that timed out as pool_busy", async () => {
    const { h, value } = await setup({
      pool: { maxChildren: 1, idleMs: 60_000, acquireTimeoutMs: 5_000, stopGraceMs: 500 },
    });
    await h.connect(ALICE);
    await h.connect(BOB);
    const s = await h.session();
    const gate = gateFile();
    const held = mcpCall(s.client, { tool: "wait_for_file", args: { path: gate }, on_behalf_of: ALICE });
    await until(async () => (await value('slaude_vendors{state="leased"}')) === 1);
    s.turn.user = BOB;
    const waiting = mcpCall(s.client, { tool: "read_item", args: { id: "2" }, on_behalf_of: BOB });
    await until(async () => (await value("slaude_pool_waiting")) === 1);
    writeFileSync(gate, "");
    expect((await held).structured.status).toBe("ok");
    expect((await waiting).structured.status).toBe("ok");
    expect(await value('slaude_pool_waits_total{outcome="slot"}')).toBe(1);

    // Bob's child now holds the only slot in a call that does not end: Alice waits and gives up.
    const gate2 = gateFile();
    const held2 = mcpCall(s.client, { tool: "wait_for_file", args: { path: gate2 }, on_behalf_of: BOB });
    await until(async () => (await value('slaude_vendors{state="leased"}')) === 1);
    s.turn.user = ALICE;
    expect(
      (await mcpCall(s.client, { tool: "read_item", args: { id: "3" }, on_behalf_of: ALICE })).structured.code,
    ).toBe("pool_busy");
    expect(await value('slaude_pool_waits_total{outcome="timeout"}')).toBe(1);
    expect(await value('slaude_calls_total{service="vendor",tool="read_item",outcome="pool_busy",via="own"}')).toBe(1);
    writeFileSync(gate2, "");
    await held2;
  });

  it("counts an audit row that could not be written (another process holds the write lock)", async () => {
    const { h, value } = await setup({ realClock: true, lockWaitMs: 300 });
    await h.connect(ALICE);
    const s = await h.session();
    const lock = await holdWriteLock(path.join(h.dir, "slaude.db"));
    locks.push(lock);
    expect(
      (await mcpCall(s.client, { tool: "read_item", args: { id: "1" }, on_behalf_of: ALICE })).structured.code,
    ).toBe("audit_unavailable");
    await lock.release();
    expect(await value('slaude_audit_write_failures_total{event="call_started"}')).toBe(1);
    expect(
      await value('slaude_calls_total{service="vendor",tool="read_item",outcome="audit_unavailable",via="own"}'),
    ).toBe(1);
  });

  it("counts reaper passes by outcome, under a bounded job label", async () => {
    const m = new PrometheusMetrics(parseRegistry(fixtureRegistryDoc(), "m"));
    const log = memoryLogger();
    let fail = true;
    const job = new PeriodicJob({
      name: "ttl reaper",
      intervalMs: 3_600_000,
      run: async () => {
        if (fail) throw new Error("database is locked");
      },
      log,
      clock: systemClock,
      metrics: m,
    });
    await job.tick();
    fail = false;
    await job.tick();
    await job.tick();
    const odd = new PeriodicJob({
      name: "job for U123ABC",
      intervalMs: 3_600_000,
      run: async () => {},
      log,
      clock: systemClock,
      metrics: m,
    });
    await odd.tick();
    const text = (await m.text()).body;
    expect(text).toContain('slaude_job_runs_total{job="ttl_reaper",outcome="failed"} 1');
    expect(text).toContain('slaude_job_runs_total{job="ttl_reaper",outcome="ok"} 2');
    expect(text).toContain('slaude_job_runs_total{job="other",outcome="ok"} 1');
    expect(text).not.toContain("U123ABC");
  });
});
