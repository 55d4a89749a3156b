import { describe, expect, it } from "vitest";
import { TenantCounter } from "../../src/limits/tenant-counter.js";

describe("per-tenant counting cap", () => {
  it("counts each team against its own cap; one team at its cap leaves the others room", () => {
    const c = new TenantCounter(2);
    expect(c.tryAcquire("TA")).toBe(true);
    expect(c.tryAcquire("TA")).toBe(true);
    expect(c.tryAcquire("TA")).toBe(false);
    expect(c.of("TA")).toBe(2);
    expect(c.tryAcquire("TB")).toBe(true);
    expect(c.teamsAtCap()).toBe(1);
    c.release("TA");
    expect(c.atCap("TA")).toBe(false);
    expect(c.tryAcquire("TA")).toBe(true);
  });

  it("holds a key only while a team holds something: bounded by what is live, and never below zero", () => {
    const c = new TenantCounter(1);
    for (let i = 0; i < 1_000; i++) {
      expect(c.tryAcquire(`T${i}`)).toBe(true);
      c.release(`T${i}`);
    }
    expect(c.size).toBe(0);
    c.release("TX");
    expect(c.of("TX")).toBe(0);
    expect(c.size).toBe(0);
  });

  it("refuses a cap that is not a positive integer", () => {
    expect(() => new TenantCounter(0)).toThrow(RangeError);
    expect(() => new TenantCounter(1.5)).toThrow(RangeError);
  });
});
