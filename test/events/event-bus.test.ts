import { describe, expect, it } from "vitest";
import { BoundedSubscriber } from "../../src/events/bounded-subscriber.js";
import { type CallEvent, PROGRESS_MESSAGE_MAX, progressMessage } from "../../src/events/call-event.js";
import { CallEventBus } from "../../src/events/event-bus.js";
import { memoryLogger } from "../../src/log/logger.js";

// The event bus and its bounded subscribers on their own: ordered synchronous fan-out, a capped
// subscriber set, a throwing subscriber isolated, and a slow subscriber dropped at its limit.

const base = {
  callId: "call_1",
  at: 1,
  teamId: "T1",
  channelId: "C1",
  threadTs: "1.2",
  callerUserId: "U1",
  service: "vendor",
  tool: "echo",
};
const started = (teamId = "T1"): CallEvent => ({ type: "call.started", ...base, teamId });

describe("CallEventBus", () => {
  it("delivers each event to every subscriber in order with increasing sequence numbers, and stops after unsubscribe", () => {
    const bus = new CallEventBus({ log: memoryLogger("debug") });
    const a: number[] = [];
    const b: number[] = [];
    const subA = bus.subscribe((_e, seq) => a.push(seq))!;
    bus.subscribe((_e, seq) => b.push(seq));
    bus.emit(started());
    bus.emit(started());
    subA.unsubscribe();
    subA.unsubscribe();
    bus.emit(started());
    expect(a).toEqual([1, 2]);
    expect(b).toEqual([1, 2, 3]);
    expect(bus.subscriberCount).toBe(1);
  });

  it("refuses a subscriber past its cap, and a throwing subscriber neither fails the emitter nor starves the others", () => {
    const log = memoryLogger("debug");
    const bus = new CallEventBus({ log, maxSubscribers: 2 });
    const got: string[] = [];
    bus.subscribe(() => {
      throw new Error("subscriber bug with secret-ish detail");
    });
    bus.subscribe((e) => got.push(e.type));
    expect(bus.subscribe(() => {})).toBeUndefined();
    expect(() => bus.emit(started())).not.toThrow();
    expect(got).toEqual(["call.started"]);
    expect(log.lines.some((l) => l.includes("call event subscriber failed") && l.includes('"error":"Error"'))).toBe(
      true,
    );
    expect(log.lines.join("\n")).not.toContain("secret-ish");
  });
});

describe("BoundedSubscriber", () => {
  it("filters, holds at most `max` items for a consumer that does not take, then drops itself and frees its backlog", () => {
    const bus = new CallEventBus({ log: memoryLogger("debug") });
    let ready = 0;
    const drops: number[] = [];
    const sub = BoundedSubscriber.attach(bus, {
      max: 3,
      filter: (e) => e.teamId === "T1",
      map: (e, seq) => `${seq}:${e.teamId}`,
      onReady: () => ready++,
      onDrop: (n) => drops.push(n),
    })!;
    bus.emit(started("T2"));
    bus.emit(started());
    bus.emit(started());
    expect(ready).toBe(1);
    expect(sub.take()).toBe("2:T1");
    bus.emit(started());
    bus.emit(started());
    expect(sub.backlog).toBe(3);
    expect(drops).toEqual([]);
    bus.emit(started());
    expect(drops).toEqual([4]);
    expect(sub.wasDropped).toBe(true);
    expect(sub.backlog).toBe(0);
    expect(bus.subscriberCount).toBe(0);
  });

  it("is refused when the bus is full", () => {
    const bus = new CallEventBus({ log: memoryLogger("debug"), maxSubscribers: 1 });
    bus.subscribe(() => {});
    expect(
      BoundedSubscriber.attach(bus, { max: 1, filter: () => true, map: () => 1, onReady: () => {}, onDrop: () => {} }),
    ).toBeUndefined();
  });
});

describe("progressMessage", () => {
  it("cuts long messages and drops empty ones", () => {
    expect(progressMessage(undefined)).toBeNull();
    expect(progressMessage("")).toBeNull();
    expect(progressMessage("step 1")).toBe("step 1");
    const cut = progressMessage("x".repeat(PROGRESS_MESSAGE_MAX + 50))!;
    expect(cut).toHaveLength(PROGRESS_MESSAGE_MAX);
    expect(cut.endsWith("…")).toBe(true);
  });
});
