import { describe, expect, it, vi } from "vitest";
import { ManualClock } from "../../src/clock/clock.js";
import type { LimitKind } from "../../src/limits/limit-kind.js";
import { memoryLogger } from "../../src/log/logger.js";
import { noMetrics } from "../../src/metrics/metrics.js";
import { PoolError } from "../../src/pool/errors.js";
import { VendorPool } from "../../src/pool/pool.js";
import { FakeLauncher, leaseOf } from "./fake-launcher.js";

// The per-team cap on vendors (issue 20 item 9): team A holding its cap waits for (or stops) its
// own vendors only, and its waiting calls never hold up team B's. Outcomes and order, no timings.

function setup(o: { maxChildren: number; perTeam: number }) {
  const clock = new ManualClock();
  const launcher = new FakeLauncher();
  const refused: LimitKind[] = [];
  const pool = new VendorPool(
    launcher,
    { maxChildren: o.maxChildren, maxChildrenPerTeam: o.perTeam, idleMs: 60_000, acquireTimeoutMs: 30_000 },
    clock,
    memoryLogger("warn"),
    { ...noMetrics, limitRefused: (l) => void refused.push(l) },
  );
  const order: string[] = [];
  const hold = (id: string, team: string) => {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const done = pool.withLease(leaseOf(id, "v1", team), async () => {
      order.push(id);
      await released;
    });
    return { done, release };
  };
  const run = (id: string, team: string) => pool.withLease(leaseOf(id, "v1", team), async () => void order.push(id));
  return { clock, launcher, pool, hold, run, order, refused };
}

describe("vendors per team", () => {
  it("team A at its cap waits while team B's calls start at once, ahead of A's waiting calls", async () => {
    const { pool, launcher, hold, run, order } = setup({ maxChildren: 4, perTeam: 2 });
    const a1 = hold("A1", "TA");
    const a2 = hold("A2", "TA");
    await vi.waitFor(() => expect(launcher.live()).toHaveLength(2));
    // A's third connection has to wait: the pool has room, team A has not.
    const a3 = run("A3", "TA");
    await vi.waitFor(() => expect(pool.stats().waiting).toBe(1));
    // B arrives after A3 and is not queued behind it.
    await run("B1", "TB");
    await run("B2", "TB");
    expect(order).toEqual(["A1", "A2", "B1", "B2"]);
    expect(pool.stats().waiting).toBe(1);
    // A's own lease ends: A3 runs on A's own slot (A1's vendor goes), B's vendors stay.
    a1.release();
    await a3;
    expect(order).toEqual(["A1", "A2", "B1", "B2", "A3"]);
    expect(
      launcher
        .live()
        .map((v) => v.connectionId)
        .sort(),
    ).toEqual(["A2", "A3", "B1", "B2"]);
    a2.release();
    await Promise.all([a1.done, a2.done]);
  });

  it("a team at its cap stops its own idle vendor, never another team's, even when that one is older", async () => {
    const { launcher, run } = setup({ maxChildren: 4, perTeam: 2 });
    await run("B1", "TB");
    await run("A1", "TA");
    await run("A2", "TA");
    await run("A3", "TA");
    // B1 is the least recently used idle vendor of the pool, but A may only make room among its own.
    expect(
      launcher
        .live()
        .map((v) => v.connectionId)
        .sort(),
    ).toEqual(["A2", "A3", "B1"]);
    expect(launcher.started.find((v) => v.connectionId === "A1")?.stopped).toBe("close");
  });

  it("a call of a team at its cap is refused pool_busy when its wait runs out, counted as the children limit; B is unaffected", async () => {
    const { clock, pool, hold, run, refused } = setup({ maxChildren: 4, perTeam: 1 });
    const a1 = hold("A1", "TA");
    await vi.waitFor(() => expect(pool.stats().live).toBe(1));
    const a2 = run("A2", "TA").catch((e: unknown) => e);
    await vi.waitFor(() => expect(pool.stats().waiting).toBe(1));
    expect(pool.teamsAtCap()).toBe(1);
    await run("B1", "TB");
    clock.advance(30_000);
    const err = await a2;
    expect(err).toBeInstanceOf(PoolError);
    expect((err as PoolError).code).toBe("pool_busy");
    expect(refused).toEqual(["children"]);
    a1.release();
    await a1.done;
  });
});
