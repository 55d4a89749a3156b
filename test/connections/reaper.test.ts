import { describe, expect, it } from "vitest";
import { PeriodicJob } from "../../src/connections/reaper.js";
import { memoryLogger } from "../../src/log/logger.js";

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe("PeriodicJob", () => {
  it("never overlaps itself, and stop() waits for the pass in flight", async () => {
    const gate = deferred();
    let runs = 0;
    let finished = false;
    const job = new PeriodicJob("test job", 60_000, async () => {
      runs++;
      await gate.promise;
      finished = true;
    }, memoryLogger());
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
    const log = memoryLogger();
    let runs = 0;
    const job = new PeriodicJob("ttl reaper", 60_000, async () => {
      runs++;
      throw new Error("disk on fire");
    }, log);
    await job.tick();
    await job.tick();
    expect(runs).toBe(2);
    expect(log.lines.filter((l) => l.includes("ttl reaper failed") && l.includes("disk on fire"))).toHaveLength(2);
  });

  it("a hung pass never blocks later runs: after its deadline the next tick runs, and stop() does not wait for it", async () => {
    const log = memoryLogger();
    let runs = 0;
    // The first pass never settles (a vendor kill that never returns); later passes do.
    const job = new PeriodicJob("revocations", 60_000, () => (++runs === 1 ? new Promise<never>(() => {}) : Promise.resolve()), log, 50);
    await job.tick(); // settles at the pass's deadline, not never
    expect(runs).toBe(1);
    await job.tick();
    await job.tick();
    expect(runs).toBe(3);
    expect(log.lines.some((l) => l.includes("revocations pass overran its deadline"))).toBe(true);
    await job.stop();
  });

  it("tolerates a bounded number of hung passes, then skips (and logs) instead of piling up more", async () => {
    const log = memoryLogger();
    let runs = 0;
    const job = new PeriodicJob("stuck", 60_000, () => (runs++, new Promise<never>(() => {})), log, 10);
    for (let i = 0; i < 8; i++) await job.tick();
    expect(runs).toBe(5); // the first pass plus four overdue ones
    expect(log.lines.some((l) => l.includes("stuck skipped: earlier passes are still hung"))).toBe(true);
    await job.stop();
  });

  it("start() runs a pass immediately", async () => {
    let runs = 0;
    const job = new PeriodicJob("j", 60_000, async () => void runs++, memoryLogger());
    job.start();
    job.start(); // idempotent
    await job.stop();
    expect(runs).toBe(1);
  });
});
