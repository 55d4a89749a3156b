import { describe, expect, it } from "vitest";
import { ManualClock, sleep, systemClock } from "../../src/clock/clock.js";

describe("ManualClock timers", () => {
  it("fires timers in due order as time passes, each seeing its own due time", () => {
    const clock = new ManualClock(1_000);
    const seen: string[] = [];
    clock.setTimeout(() => seen.push(`b@${clock.now()}`), 200);
    clock.setTimeout(() => seen.push(`a@${clock.now()}`), 100);
    const cancelled = clock.setTimeout(() => seen.push("never"), 150);
    cancelled.cancel();
    clock.advance(99);
    expect(seen).toEqual([]);
    clock.advance(150);
    expect(seen).toEqual(["a@1100", "b@1200"]);
    expect(clock.now()).toBe(1_249);
    expect(clock.pendingTimers()).toBe(0);
  });

  it("re-arms intervals until cancelled", () => {
    const clock = new ManualClock(0);
    let n = 0;
    const t = clock.setInterval(() => n++, 10);
    clock.advance(35);
    expect(n).toBe(3);
    t.cancel();
    clock.advance(100);
    expect(n).toBe(3);
  });

  it("lets awaiting code react between timers with advanceAsync", async () => {
    const clock = new ManualClock(0);
    const order: number[] = [];
    const chain = (async () => {
      await sleep(clock, 10);
      order.push(clock.now());
      await sleep(clock, 10);
      order.push(clock.now());
    })();
    await clock.advanceAsync(25);
    await chain;
    expect(order).toEqual([10, 20]);
  });

  it("sleep resolves at once when its signal aborts", async () => {
    const clock = new ManualClock(0);
    const ac = new AbortController();
    const p = sleep(clock, 60_000, ac.signal);
    ac.abort();
    await p;
    expect(clock.pendingTimers()).toBe(0);
  });

  it("the system clock's timers fire and cancel", async () => {
    let fired = false;
    const cancelled = systemClock.setTimeout(() => (fired = true), 1);
    cancelled.cancel();
    await sleep(systemClock, 20);
    expect(fired).toBe(false);
  });
});
