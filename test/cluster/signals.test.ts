// The signals port without a database: the wire format is strict and size-bounded, the local
// adapter delivers to this process's own subscribers (never inside the publisher's stack), and the
// delivery queue is bounded: past its limit the backlog becomes one gap (a full re-read).
import { describe, expect, it, vi } from "vitest";
import { LocalClusterSignals } from "../../src/cluster/local-signals.js";
import { decodeSignal, encodeSignal, MAX_SIGNAL_BYTES, type SignalPayload } from "../../src/cluster/signals.js";
import { memoryLogger } from "../../src/log/logger.js";

describe("the signal wire format", () => {
  it("round-trips each topic and refuses anything else: unknown topic, extra field, bad id, not JSON, oversized", () => {
    for (const [topic, payload] of [
      ["approval_decided", { approvalId: "appr_abc-DEF_123" }],
      ["connection_ended", { connectionId: "conn_x" }],
      ["membership_changed", { teamId: "T1", channelId: "C1" }],
      ["membership_changed", { teamId: "", channelId: "C1" }],
    ] as const) {
      const wire = encodeSignal(topic, payload as never);
      expect(wire, topic).toBeTypeOf("string");
      expect(decodeSignal(wire!)).toEqual({ topic, payload });
    }
    const bad = [
      "not json",
      JSON.stringify({ topic: "grant_created", payload: { id: "g" } }),
      JSON.stringify({ topic: "connection_ended", payload: { connectionId: "conn_x", kill: "all" } }),
      JSON.stringify({ topic: "connection_ended", payload: { connectionId: "conn_x" }, extra: 1 }),
      JSON.stringify({ topic: "connection_ended", payload: { connectionId: "conn x; DROP" } }),
      JSON.stringify({ topic: "membership_changed", payload: { teamId: "T1", channelId: "" } }),
      JSON.stringify({ topic: "connection_ended", payload: { connectionId: "c".repeat(129) } }),
      JSON.stringify({
        topic: "connection_ended",
        payload: { connectionId: "conn_x" },
        pad: "x".repeat(MAX_SIGNAL_BYTES),
      }),
    ];
    for (const text of bad) expect(decodeSignal(text), text.slice(0, 80)).toBeUndefined();
    expect(encodeSignal("connection_ended", { connectionId: "conn x" })).toBeUndefined();
    expect(
      encodeSignal("connection_ended", { connectionId: "conn_x", more: 1 } as SignalPayload<"connection_ended">),
    ).toBeUndefined();
  });
});

describe("LocalClusterSignals", () => {
  it("delivers to this process's own subscribers, after the publisher's stack, until unsubscribed", async () => {
    const signals = new LocalClusterSignals(memoryLogger());
    const got: string[] = [];
    const off = signals.subscribe("connection_ended", ({ connectionId }) => void got.push(connectionId));
    signals.subscribe("approval_decided", ({ approvalId }) => void got.push(approvalId));
    const sent = signals.publish("connection_ended", { connectionId: "conn_1" });
    expect(got).toEqual([]); // not inside publish()
    await sent;
    await vi.waitFor(() => expect(got).toEqual(["conn_1"]));
    off();
    await signals.publish("connection_ended", { connectionId: "conn_2" });
    await signals.publish("approval_decided", { approvalId: "appr_1" });
    await vi.waitFor(() => expect(got).toEqual(["conn_1", "appr_1"]));
  });

  it("does not send a payload that fails its topic's schema, and a failing handler does not stop the others", async () => {
    const log = memoryLogger();
    const signals = new LocalClusterSignals(log);
    const got: string[] = [];
    signals.subscribe("connection_ended", () => {
      throw new Error("boom");
    });
    signals.subscribe("connection_ended", ({ connectionId }) => void got.push(connectionId));
    await signals.publish("connection_ended", { connectionId: "../../etc" });
    await signals.publish("connection_ended", { connectionId: "conn_ok" });
    await vi.waitFor(() => expect(got).toEqual(["conn_ok"]));
    await vi.waitFor(() =>
      expect(log.lines.some((l) => l.includes("cluster signal handler failed") && l.includes("boom"))).toBe(true),
    );
    expect(log.lines.some((l) => l.includes("cluster signal not sent"))).toBe(true);
  });

  it("bounds the delivery queue: past it the backlog is dropped and one gap (a full re-read) runs instead", async () => {
    const signals = new LocalClusterSignals(memoryLogger(), { maxQueued: 3, concurrency: 1 });
    let release!: () => void;
    const blocked = new Promise<void>((r) => (release = r));
    const handled: string[] = [];
    let gaps = 0;
    signals.subscribe("connection_ended", async ({ connectionId }) => {
      handled.push(connectionId);
      await blocked;
    });
    signals.onGap(() => void gaps++);
    for (let i = 0; i < 20; i++) await signals.publish("connection_ended", { connectionId: `conn_${i}` });
    release();
    await vi.waitFor(() => expect(gaps).toBe(1));
    // The first ran; at most the queue's size more; the rest were superseded by the gap.
    expect(handled.length).toBeLessThanOrEqual(1 + 3);
    expect(handled[0]).toBe("conn_0");
  });
});
