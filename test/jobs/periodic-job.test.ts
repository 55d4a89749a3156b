// PeriodicJob on a ManualClock: intervals, deadlines and pass timing are driven by advancing the
// clock, so nothing here waits in real time.
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../src/clock/clock.js";
import { PeriodicJob } from "../../src/jobs/periodic-job.js";
import { memoryLogger } from "../../src/log/logger.js";

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

const log = () => memoryLogger();

describe("PeriodicJob", () => {
  it("never overlaps itself, and stop() waits for the pass in flight", async () => {
    const gate = deferred();
    let runs = 0;
    let finished = false;
    const job = new PeriodicJob({
      name: "test job",
      intervalMs: 60_000,
      run: async () => {
        runs++;
        await gate.promise;
        finished = true;
      },
      log: log(),
      clock: new ManualClock(),
    });
    const first = job.tick();
    await job.tick(); // skipped: the first pass is still running
    expect(runs).toBe(1);
    const stopped = job.stop();
    gate.resolve();
    await stopped;
    expect(finished).toBe(true);
    await first;
    await job.tick();
    expect(runs).toBe(2);
  });

  it("logs a failing pass instead of throwing, and runs again afterwards", async () => {
    const l = log();
    let runs = 0;
    const job = new PeriodicJob({
      name: "ttl reaper",
      intervalMs: 60_000,
      run: async () => {
        runs++;
        throw new Error("disk on fire");
      },
      log: l,
      clock: new ManualClock(),
    });
    await job.tick();
    await job.tick();
    expect(runs).toBe(2);
    expect(l.lines.filter((x) => x.includes("ttl reaper failed") && x.includes("disk on fire"))).toHaveLength(2);
  });

  it("a hung pass never blocks later runs: after its deadline the next tick runs, and stop() does not wait for it", async () => {
    const l = log();
    const clock = new ManualClock();
    let runs = 0;
    // The first pass never settles (a vendor kill that never returns); later passes do.
    const job = new PeriodicJob({
      name: "revocations",
      intervalMs: 60_000,
      run: () => (++runs === 1 ? new Promise<never>(() => {}) : Promise.resolve()),
      log: l,
      clock,
      deadlineMs: 50,
    });
    let settled = false;
    const first = job.tick().then(() => (settled = true));
    await clock.advanceAsync(49);
    expect(settled).toBe(false); // still within the deadline
    await job.tick(); // skipped: in flight within its deadline
    expect(runs).toBe(1);
    await clock.advanceAsync(1);
    await first; // settles at the pass's deadline, not never
    await job.tick();
    await job.tick();
    expect(runs).toBe(3);
    expect(l.lines.some((x) => x.includes("revocations pass overran its deadline"))).toBe(true);
    await job.stop(); // the clock stands still: this returns only because nothing waits for the hung pass
  });

  it("tolerates a bounded number of hung passes, then skips (and logs) instead of piling up more", async () => {
    const l = log();
    const clock = new ManualClock();
    let runs = 0;
    const job = new PeriodicJob({
      name: "stuck",
      intervalMs: 60_000,
      run: () => {
        runs++;
        return new Promise<never>(() => {});
      },
      log: l,
      clock,
      deadlineMs: 10,
    });
    for (let i = 0; i < 8; i++) {
      const t = job.tick();
      await clock.advanceAsync(10);
      await t;
    }
    expect(runs).toBe(5); // the first pass plus four overdue ones
    expect(l.lines.some((x) => x.includes("stuck skipped: earlier passes are still hung"))).toBe(true);
    const stopped = job.stop();
    await clock.advanceAsync(10);
    await stopped;
  });

  it("start() runs a pass immediately, then one per interval of the clock, until stopped", async () => {
    const clock = new ManualClock();
    let runs = 0;
    const job = new PeriodicJob({ name: "j", intervalMs: 60_000, run: async () => void runs++, log: log(), clock });
    job.start();
    job.start(); // idempotent
    expect(runs).toBe(1);
    await clock.advanceAsync(59_999);
    expect(runs).toBe(1);
    await clock.advanceAsync(1);
    expect(runs).toBe(2);
    await clock.advanceAsync(120_000);
    expect(runs).toBe(4);
    await job.stop();
    expect(clock.pendingTimers()).toBe(0);
    await clock.advanceAsync(600_000);
    expect(runs).toBe(4);
  });

  it("reports each pass with its duration on the clock", async () => {
    const clock = new ManualClock();
    const gate = deferred();
    const ran: [string, string, number][] = [];
    const job = new PeriodicJob({
      name: "timed",
      intervalMs: 60_000,
      run: () => gate.promise,
      log: log(),
      clock,
      metrics: { jobRan: (name, outcome, seconds) => void ran.push([name, outcome, seconds]) },
    });
    const pass = job.tick();
    await clock.advanceAsync(2_500);
    gate.resolve();
    await pass;
    expect(ran).toEqual([["timed", "ok", 2.5]]);
  });
});
