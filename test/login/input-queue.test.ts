import { describe, expect, it } from "vitest";
import { InputQueue } from "../../src/login/input-queue.js";

describe("InputQueue", () => {
  it("runs inputs one at a time in order, refuses past its bound, and drops everything once cleared", async () => {
    const ran: number[] = [];
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => (release = r));
    let active = 0;
    let maxActive = 0;
    const q = new InputQueue<number>(
      3,
      async (n) => {
        active++;
        maxActive = Math.max(maxActive, active);
        if (n === 0) await gate;
        ran.push(n);
        active--;
      },
      () => undefined,
    );
    expect(q.push(0)).toBe(true); // running, not waiting
    expect([q.push(1), q.push(2), q.push(3)]).toEqual([true, true, true]);
    expect(q.push(4)).toBe(false);
    expect(q.size).toBe(3);
    release();
    await new Promise((r) => setTimeout(r, 10));
    expect(ran).toEqual([0, 1, 2, 3]);
    expect(maxActive).toBe(1);
    q.clear();
    expect(q.push(5)).toBe(false);
  });

  it("a failing input is reported and the next one still runs", async () => {
    const errors: unknown[] = [];
    const ran: number[] = [];
    const q = new InputQueue<number>(
      4,
      async (n) => {
        if (n === 1) throw new Error("boom");
        ran.push(n);
      },
      (e) => errors.push(e),
    );
    q.push(1);
    q.push(2);
    await new Promise((r) => setTimeout(r, 10));
    expect(ran).toEqual([2]);
    expect(errors).toHaveLength(1);
  });
});
