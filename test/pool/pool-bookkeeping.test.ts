import { describe, expect, it, vi } from "vitest";
import { ManualClock } from "../../src/clock/clock.js";
import { memoryLogger } from "../../src/log/logger.js";
import { PoolError } from "../../src/pool/errors.js";
import { type PoolOptions, VendorPool } from "../../src/pool/pool.js";
import { FakeLauncher, leaseOf } from "./fake-launcher.js";

// The pool's bookkeeping on the in-memory launcher and a manual clock: the cap, idle reaping,
// acquire waits and their timeout, LRU eviction, respawn on a new credential, crashes and failed
// starts, and the order waiting calls are served in (no thrash under overload). Milliseconds a
// test; the real-process behaviour (groups, stop sequence, ledger) is covered by pool.test.ts.

function setup(o: Partial<PoolOptions> = {}) {
  const clock = new ManualClock();
  const launcher = new FakeLauncher();
  const pool = new VendorPool(
    launcher,
    { maxChildren: 2, idleMs: 60_000, acquireTimeoutMs: 30_000, ...o },
    clock,
    memoryLogger("warn"),
  );
  /** Starts a call on `id` that holds its lease until `release()`; `order` records when each call ran. */
  const order: string[] = [];
  const hold = (id: string, version = "v1") => {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const done = pool.withLease(leaseOf(id, version), async (client) => {
      order.push(id);
      await client.callTool({ name: "echo", arguments: { text: id } });
      await released;
    });
    return { done, release };
  };
  const run = (id: string) => pool.withLease(leaseOf(id), async () => void order.push(id));
  return { clock, launcher, pool, hold, run, order };
}

const waiting = (pool: VendorPool, n: number) => vi.waitFor(() => expect(pool.stats().waiting).toBe(n));

describe("pool bookkeeping (in-memory launcher)", () => {
  it("reuses a connection's vendor and never runs more than maxChildren", async () => {
    const { pool, launcher, hold, run } = setup();
    const a = hold("A");
    const b = hold("B");
    await vi.waitFor(() => expect(launcher.live()).toHaveLength(2));
    const c = run("C");
    await waiting(pool, 1);
    expect(
      launcher
        .live()
        .map((v) => v.connectionId)
        .sort(),
    ).toEqual(["A", "B"]);
    // A second call on A joins its live vendor: no slot needed, no wait.
    await run("A");
    expect(launcher.spawnsOf("A")).toBe(1);
    a.release();
    await c;
    expect(
      launcher
        .live()
        .map((v) => v.connectionId)
        .sort(),
    ).toEqual(["B", "C"]);
    expect(pool.stats()).toMatchObject({ live: 2, spawned: 3, waiting: 0 });
    b.release();
    await Promise.all([a.done, b.done]);
  });

  it("reaps a vendor idle for idleMs on the clock, and not a moment before", async () => {
    const { pool, launcher, clock, run } = setup();
    await run("A");
    clock.advance(59_999);
    expect(await pool.reapIdle()).toBe(0);
    clock.advance(1);
    expect(await pool.reapIdle()).toBe(1);
    expect(launcher.started[0]!.stopped).toBe("close");
    expect(pool.has("A")).toBe(false);
  });

  it("refuses with pool_busy once acquireTimeoutMs passes on the clock, and only then", async () => {
    const { pool, clock, hold } = setup({ maxChildren: 1, acquireTimeoutMs: 5_000 });
    const a = hold("A");
    const b = pool.withLease(leaseOf("B"), async () => "ran");
    const outcome = b.then(
      () => "ran",
      (e: unknown) => (e as PoolError).code,
    );
    await waiting(pool, 1);
    clock.advance(4_999);
    expect(pool.stats().waiting).toBe(1);
    clock.advance(1);
    expect(await outcome).toBe("pool_busy");
    expect(pool.stats().waiting).toBe(0);
    a.release();
    await a.done;
  });

  it("evicts the least recently used idle vendor to make room", async () => {
    const { pool, launcher, clock, run } = setup();
    await run("A");
    clock.advance(10);
    await run("B");
    clock.advance(10);
    await run("A");
    await run("C");
    expect(launcher.started.find((v) => v.connectionId === "B")!.stopped).toBe("close");
    expect(pool.liveConnectionIds().sort()).toEqual(["A", "C"]);
  });

  it("respawns a vendor whose credential version changed, killing the old one", async () => {
    const { pool, launcher } = setup();
    await pool.withLease(leaseOf("A", "v1"), async () => {});
    await pool.withLease(leaseOf("A", "v2"), async () => {});
    expect(launcher.started.map((v) => [v.connectionId, v.stopped])).toEqual([
      ["A", "kill"],
      ["A", undefined],
    ]);
    expect(launcher.started[1]!.secrets).toEqual({ kind: "env", env: { TOKEN: "token-A-v2" } });
  });

  it("a crashed vendor frees its slot; a failed start fails its call with the launcher's code and frees the slot", async () => {
    const { pool, launcher, hold, run } = setup({ maxChildren: 1 });
    await run("A");
    launcher.started[0]!.crash();
    expect(pool.has("A")).toBe(false);
    launcher.failNext(new PoolError("backoff", "unreachable", { retryAt: 1 }));
    const failed = await pool.withLease(leaseOf("B"), async () => {}).catch((e: unknown) => e);
    expect((failed as PoolError).code).toBe("backoff");
    expect(pool.stats()).toMatchObject({ live: 0, waiting: 0 });
    const c = hold("C");
    await vi.waitFor(() => expect(pool.stats().leased).toBe(1));
    c.release();
    await c.done;
  });
});

describe("no pool thrash under overload (issue 13 item 7)", () => {
  it("a call arriving while others wait queues behind them instead of taking the freed slot", async () => {
    const { pool, hold, run, order } = setup({ maxChildren: 1 });
    const a = hold("A");
    await vi.waitFor(() => expect(order).toEqual(["A"]));
    const b = run("B");
    await waiting(pool, 1);
    a.release();
    // Arrives in the same tick the slot frees: B waited first and runs first.
    const e = run("E");
    await Promise.all([a.done, b, e]);
    expect(order).toEqual(["A", "B", "E"]);
  });

  it("calls queued for a vendor that came up run on it before any vendor is evicted: one spawn per connection", async () => {
    const { pool, launcher, hold, order } = setup({ maxChildren: 1 });
    const a = hold("A");
    await vi.waitFor(() => expect(order).toEqual(["A"]));
    const b1 = hold("B");
    await waiting(pool, 1);
    const c1 = hold("C");
    await waiting(pool, 2);
    const b2 = hold("B");
    await waiting(pool, 3);
    a.release();
    // B1 takes the slot; B2 joins B's vendor as soon as it is up, ahead of C.
    await vi.waitFor(() => expect(order).toEqual(["A", "B", "B"]));
    b1.release();
    b2.release();
    await vi.waitFor(() => expect(order).toEqual(["A", "B", "B", "C"]));
    c1.release();
    await Promise.all([a.done, b1.done, b2.done, c1.done]);
    expect([launcher.spawnsOf("A"), launcher.spawnsOf("B"), launcher.spawnsOf("C")]).toEqual([1, 1, 1]);
  });
});
