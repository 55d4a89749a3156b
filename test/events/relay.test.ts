import { randomBytes } from "node:crypto";
import { describe, expect, it, vi } from "vitest";
import { ManualClock } from "../../src/clock/clock.js";
import type { BrokerEvent } from "../../src/events/broker-event.js";
import { CallEventBus } from "../../src/events/event-bus.js";
import { EventRelay, RELAY_BATCH_WINDOW_MS, type RelayTransport } from "../../src/events/relay.js";
import { memoryLogger } from "../../src/log/logger.js";

// The relay's own bounds, over an in-memory transport (one channel, every listener hears every
// notify, a notify can be held open): its queue never passes maxQueued however slow the database,
// every notification fits PostgreSQL's limit, and each event arrives once on the other bus.

class MemoryChannel implements RelayTransport {
  readonly sent: string[] = [];
  private readonly listeners = new Set<(p: string) => void>();
  hold: Promise<void> | undefined;
  async notify(_channel: string, payload: string): Promise<void> {
    await this.hold;
    this.sent.push(payload);
    for (const l of this.listeners) queueMicrotask(() => l(payload));
  }
  async listen(_channel: string, onMessage: (p: string) => void) {
    this.listeners.add(onMessage);
    return { close: async () => void this.listeners.delete(onMessage) };
  }
}

const progress = (i: number): BrokerEvent => ({
  type: "call.progress",
  callId: `call_${i}`,
  at: 1,
  teamId: "T1",
  channelId: "C1",
  threadTs: "1.1",
  callerUserId: "U1",
  service: "vendor",
  tool: "slow",
  progress: i,
  total: null,
  message: "é".repeat(450),
});

describe("EventRelay", () => {
  it("holds at most maxQueued events while the database is slow, drops the rest with one log line, and delivers the rest once, in batches under the NOTIFY limit", async () => {
    const clock = new ManualClock(Date.now());
    const log = memoryLogger("debug");
    const channel = new MemoryChannel();
    const key = randomBytes(32);
    const busA = new CallEventBus({ log });
    const busB = new CallEventBus({ log });
    const a = new EventRelay(busA, channel, key, {
      log,
      clock,
      limits: { maxQueued: 100, maxBatchBytes: 5_000, maxSkewMs: 60_000 },
    });
    const b = new EventRelay(busB, channel, key, { log, clock });
    await a.start();
    await b.start();
    const got: BrokerEvent[] = [];
    busB.subscribe((e) => void got.push(e));

    let release!: () => void;
    channel.hold = new Promise((r) => (release = r));
    for (let i = 0; i < 1_000; i++) busA.emit(progress(i));
    await Promise.resolve();
    // One batch is in flight (taken off the queue); the queue itself never passed its cap.
    expect(a.queued).toBeLessThanOrEqual(100);
    expect(log.lines.filter((l) => l.includes("events relay queue full")).length).toBe(1);
    release();
    channel.hold = undefined;
    await vi.waitFor(() => expect(a.queued).toBe(0));
    await vi.waitFor(() => expect(got.length).toBeGreaterThan(90));
    for (const s of channel.sent) expect(Buffer.byteLength(s)).toBeLessThan(8_000);
    const ids = got.map((e) => (e as { callId: string }).callId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(got.length).toBeLessThanOrEqual(101 + 10);
    // B relays nothing back: what it received is remote on its bus.
    expect(got.every((e) => busB.isRemote(e))).toBe(true);
    await a.close();
    await b.close();
  });

  it("sends events emitted within the batch window in one NOTIFY: a warm call's started and ended events travel together", async () => {
    const log = memoryLogger("debug");
    const channel = new MemoryChannel();
    const key = randomBytes(32);
    const [busA, busB] = [new CallEventBus({ log }), new CallEventBus({ log })];
    const a = new EventRelay(busA, channel, key, { log, clock: new ManualClock(Date.now()) });
    const b = new EventRelay(busB, channel, key, { log, clock: new ManualClock(Date.now()) });
    await a.start();
    await b.start();
    const got: BrokerEvent[] = [];
    busB.subscribe((e) => void got.push(e));
    busA.emit(progress(1));
    await new Promise((r) => setTimeout(r, 1)); // the call runs: well within the window
    busA.emit(progress(2));
    await vi.waitFor(() => expect(got).toHaveLength(2));
    expect(channel.sent).toHaveLength(1);
    // Past the window, the next event goes in a NOTIFY of its own.
    await new Promise((r) => setTimeout(r, RELAY_BATCH_WINDOW_MS + 5));
    busA.emit(progress(3));
    await vi.waitFor(() => expect(got).toHaveLength(3));
    expect(channel.sent).toHaveLength(2);
    await a.close();
    await b.close();
  });
});
