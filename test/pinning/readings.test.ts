import type { Client } from "@modelcontextprotocol/client";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ManualClock } from "../../src/clock/clock.js";
import { memoryLogger } from "../../src/log/logger.js";
import type { ToolDefinition } from "../../src/pinning/definition.js";
import { VendorReadings, type VendorWatch } from "../../src/pinning/readings.js";
import { PoolError } from "../../src/pool/errors.js";
import { linkedVendor } from "../support/linked-vendor.js";

// The bounds on re-reading a live vendor's tool list (issue 21 finding 4): a vendor that floods
// notifications/tools/list_changed gets one read per gap on the injected clock, one read of a
// vendor at a time and one per service at a time, and one over the limits is stopped. Real SDK
// clients and servers over in-memory transports; the read itself is the test's, to count and hold.

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

/** A real client/server pair; the server side sends list_changed on demand. */
async function vendor(): Promise<{ client: Client; notify: (n: number) => Promise<void> }> {
  const { client, server, close } = await linkedVendor();
  closers.push(close);
  return {
    client,
    notify: async (n) => void (await Promise.all(Array.from({ length: n }, () => server.sendToolListChanged()))),
  };
}

/** A read the test counts and can hold open. */
function reader() {
  const state = { reads: 0, inFlight: 0, maxInFlight: 0, hold: undefined as Promise<void> | undefined, fail: false };
  const read = async (): Promise<ToolDefinition[]> => {
    state.reads++;
    state.inFlight++;
    state.maxInFlight = Math.max(state.maxInFlight, state.inFlight);
    try {
      if (state.hold) await state.hold;
      if (state.fail) throw new PoolError("vendor_misbehaved", "over the limit");
      return [{ name: "t", description: `read ${state.reads}` }];
    } finally {
      state.inFlight--;
    }
  };
  return { state, read };
}

function readings(clock: ManualClock, recorded: string[] = []) {
  return new VendorReadings({
    clock,
    log: memoryLogger("debug"),
    minGapMs: 1_000,
    record: async (scope, defs) => {
      recorded.push(`${scope.service}:${defs[0]?.description ?? ""}`);
      return new Map(defs.map((d) => [d.name, d.description ?? ""]));
    },
  });
}

const settle = () => new Promise<void>((r) => setImmediate(r));

describe("re-reading a live vendor's tool list", () => {
  it("a flood of list_changed costs one read per gap on the injected clock", async () => {
    const clock = new ManualClock();
    const r = readings(clock);
    const { client, notify } = await vendor();
    const { state, read } = reader();
    const watch: VendorWatch = { scope: { teamId: "T1", service: "svc" }, read, stop: async () => {} };
    await r.watch(client, watch);
    expect(state.reads).toBe(1);

    await notify(200);
    await settle();
    expect(state.reads).toBe(1);
    await clock.advanceAsync(1_000);
    await vi.waitFor(() => expect(state.reads).toBe(2));
    await clock.advanceAsync(5_000);
    expect(state.reads).toBe(2);

    // Notifications during a read: one more read after it, not one per notification.
    let release!: () => void;
    state.hold = new Promise((res) => (release = res));
    await clock.advanceAsync(1_000);
    await notify(1);
    await clock.advanceAsync(0);
    await vi.waitFor(() => expect(state.inFlight).toBe(1));
    await notify(50);
    await settle();
    state.hold = undefined;
    release();
    await vi.waitFor(() => expect(state.inFlight).toBe(0));
    await clock.advanceAsync(1_000);
    await vi.waitFor(() => expect(state.reads).toBe(4));
    await clock.advanceAsync(10_000);
    expect(state.reads).toBe(4);
    expect(state.maxInFlight).toBe(1);
    expect(r.observation(client)).toEqual({ kind: "read", hashes: new Map([["t", "read 4"]]) });
  });

  it("a call's check waits for a read a notification asked for, rather than deciding on the old reading", async () => {
    const clock = new ManualClock();
    const r = readings(clock);
    const { client, notify } = await vendor();
    const { state, read } = reader();
    await r.watch(client, { scope: { teamId: "T1", service: "svc" }, read, stop: async () => {} });
    await notify(1);
    await settle();
    // The notification's read waits for its gap; a call needing the answer reads now.
    await r.current(client);
    expect(state.reads).toBe(2);
    expect(r.observation(client)).toEqual({ kind: "read", hashes: new Map([["t", "read 2"]]) });
  });

  it("the vendors of one service in a team are read one at a time; another service is not held up", async () => {
    const clock = new ManualClock();
    const order: string[] = [];
    const r = readings(clock, order);
    const shared = reader();
    const other = reader();
    const clients = await Promise.all([vendor(), vendor(), vendor()]);
    const [a, b, c] = clients.map((x) => x.client) as [Client, Client, Client];
    await r.watch(a, { scope: { teamId: "T1", service: "svc" }, read: shared.read, stop: async () => {} });
    await r.watch(b, { scope: { teamId: "T1", service: "svc" }, read: shared.read, stop: async () => {} });
    await r.watch(c, { scope: { teamId: "T1", service: "other" }, read: other.read, stop: async () => {} });
    let release!: () => void;
    shared.state.hold = new Promise((res) => (release = res));
    const both = Promise.all([r.reread(a), r.reread(b)]);
    await vi.waitFor(() => expect(shared.state.inFlight).toBe(1));
    // The other service's vendor is read meanwhile.
    await r.reread(c);
    expect(other.state.reads).toBe(2);
    await settle();
    expect(shared.state.inFlight).toBe(1);
    shared.state.hold = undefined;
    release();
    await both;
    expect(shared.state.maxInFlight).toBe(1);
    expect(shared.state.reads).toBe(4);
  });

  it("a re-read over the limits stops the vendor and leaves it unverified; at its start the error is the pool's", async () => {
    const clock = new ManualClock();
    const r = readings(clock);
    const { client } = await vendor();
    const { state, read } = reader();
    let stopped = 0;
    await r.watch(client, { scope: { teamId: "T1", service: "svc" }, read, stop: async () => void stopped++ });
    state.fail = true;
    await r.reread(client);
    expect(stopped).toBe(1);
    expect(r.observation(client)).toEqual({ kind: "unread" });

    const fresh = await vendor();
    await expect(
      r.watch(fresh.client, { scope: { teamId: "T1", service: "svc" }, read, stop: async () => void stopped++ }),
    ).rejects.toThrow(PoolError);
    expect(stopped).toBe(1);
  });
});
