import { describe, expect, it } from "vitest";
import { ManualClock } from "../../src/clock/clock.js";
import type { BrokerEvent } from "../../src/events/broker-event.js";
import { CallEventBus } from "../../src/events/event-bus.js";
import { memoryLogger } from "../../src/log/logger.js";
import { PoolError } from "../../src/pool/errors.js";
import { VendorPool } from "../../src/pool/pool.js";
import { FakeLauncher, leaseOf } from "../pool/fake-launcher.js";

// child.started / child.stopped from the pool (issue 21 item 8), one stop event per child with the
// reason the pool stopped it for; the end-to-end ones (crashed, revoked, evicted, idle) run real
// children in lifecycle-events.test.ts.

function rig() {
  const log = memoryLogger("debug");
  const bus = new CallEventBus({ log });
  const seen: string[] = [];
  bus.subscribe(
    (e: BrokerEvent) =>
      void seen.push(
        "reason" in e
          ? `${e.type}:${e.connectionId}:${e.reason}`
          : `${e.type}:${"connectionId" in e ? e.connectionId : ""}`,
      ),
  );
  const launcher = new FakeLauncher();
  const pool = new VendorPool(
    launcher,
    { maxChildren: 4, idleMs: 60_000, acquireTimeoutMs: 5_000 },
    new ManualClock(),
    log,
    undefined,
    bus,
  );
  return { pool, launcher, seen };
}

describe("child events", () => {
  it("replaced when the credential changed, limit when the vendor went past the broker's limits, shutdown at the end: once each", async () => {
    const { pool, launcher, seen } = rig();
    await pool.withLease(leaseOf("A", "v1"), async () => {});
    await pool.withLease(leaseOf("A", "v2"), async () => {});
    expect(seen).toEqual(["child.started:A", "child.stopped:A:replaced", "child.started:A"]);

    let misbehave = true;
    pool.onVendorStarted(() => {
      if (misbehave && launcher.started.at(-1)?.connectionId === "B")
        throw new PoolError("vendor_misbehaved", "endless tools/list");
    });
    await expect(pool.withLease(leaseOf("B"), async () => {})).rejects.toThrow("endless");
    expect(seen.slice(3)).toEqual(["child.started:B", "child.stopped:B:limit"]);
    misbehave = false;

    // A crash is reported when it happens, and not again when the pool clears the dead entry.
    await pool.withLease(leaseOf("C"), async () => {});
    launcher.started.find((v) => v.connectionId === "C")!.crash();
    await pool.withLease(leaseOf("C"), async () => {});
    expect(seen.slice(5)).toEqual(["child.started:C", "child.stopped:C:crashed", "child.started:C"]);

    await pool.shutdown();
    expect(seen.slice(8).sort()).toEqual(["child.stopped:A:shutdown", "child.stopped:C:shutdown"]);
    expect(seen.filter((s) => s.startsWith("child.stopped:B"))).toHaveLength(1);
  });
});
