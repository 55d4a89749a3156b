import { describe, expect, it } from "vitest";
import { rateSpec } from "../../src/config/tenant-limits.js";
import { type BucketRate, type BucketState, fullAfterMs, refilled, takeToken } from "../../src/limits/token-bucket.js";

// The token bucket as a table: state, time and rate in; granted or refused with its retry time out.
// The oracle below is written independently (integer milli-tokens), not by calling the rule.

const perMin = (n: number): BucketRate => ({ burst: n, perMs: n / 60_000 });

describe("token bucket", () => {
  const rows: {
    name: string;
    state: BucketState | undefined;
    rate: BucketRate;
    now: number;
    granted: boolean;
    tokens: number;
    retryAt?: number;
  }[] = [
    {
      name: "absent bucket is full: granted, burst-1 left",
      state: undefined,
      rate: perMin(60),
      now: 1_000,
      granted: true,
      tokens: 59,
    },
    {
      name: "one token left: granted, none left",
      state: { tokens: 1, updatedAt: 1_000 },
      rate: perMin(60),
      now: 1_000,
      granted: true,
      tokens: 0,
    },
    {
      name: "empty at the same instant: refused, retry after one refill interval",
      state: { tokens: 0, updatedAt: 1_000 },
      rate: perMin(60),
      now: 1_000,
      granted: false,
      tokens: 0,
      retryAt: 2_000,
    },
    {
      name: "half a token: retry after the other half",
      state: { tokens: 0.5, updatedAt: 1_000 },
      rate: perMin(60),
      now: 1_000,
      granted: false,
      tokens: 0.5,
      retryAt: 1_500,
    },
    {
      name: "refilled one token after 1 s at 60/min: granted",
      state: { tokens: 0, updatedAt: 1_000 },
      rate: perMin(60),
      now: 2_000,
      granted: true,
      tokens: 0,
    },
    {
      name: "refill never exceeds burst",
      state: { tokens: 0, updatedAt: 0 },
      rate: perMin(3),
      now: 10_000_000,
      granted: true,
      tokens: 2,
    },
    {
      name: "a clock gone back refills nothing",
      state: { tokens: 0, updatedAt: 5_000 },
      rate: perMin(60),
      now: 1_000,
      granted: false,
      tokens: 0,
      retryAt: 2_000,
    },
    {
      name: "10/s: 100 ms per token",
      state: { tokens: 0, updatedAt: 0 },
      rate: { burst: 10, perMs: 10 / 1000 },
      now: 50,
      granted: false,
      tokens: 0.5,
      retryAt: 100,
    },
  ];
  for (const r of rows) {
    it(r.name, () => {
      const d = takeToken(r.state, r.rate, r.now);
      expect(d.granted).toBe(r.granted);
      expect(d.state.tokens).toBeCloseTo(r.tokens, 9);
      if (!d.granted) expect(d.retryAt).toBe(r.retryAt);
      // The update time never moves back.
      expect(d.state.updatedAt).toBe(Math.max(r.now, r.state?.updatedAt ?? r.now));
    });
  }

  it("a refused call retried at its retryAt is granted, and not two milliseconds before (generated over rates and fill levels)", () => {
    for (const n of [1, 2, 7, 60, 120, 1200]) {
      for (const left of [0, 0.1, 0.5, 0.999]) {
        const rate = perMin(n);
        const d = takeToken({ tokens: left, updatedAt: 0 }, rate, 0);
        expect(d.granted).toBe(false);
        if (d.granted) continue;
        // retryAt is the earliest time rounded up to the millisecond (floating point may cost one more): two earlier, still refused.
        expect(refilled(d.state, rate, d.retryAt - 2)).toBeLessThan(1);
        expect(takeToken(d.state, rate, d.retryAt).granted).toBe(true);
      }
    }
  });

  it("grants exactly burst calls at one instant, then one per interval (oracle: integer milli-tokens)", () => {
    const rate = perMin(5);
    let state: BucketState | undefined;
    let granted = 0;
    for (let i = 0; i < 20; i++) {
      const d = takeToken(state, rate, 0);
      state = d.state;
      if (d.granted) granted++;
    }
    expect(granted).toBe(5);
    // 12 s per token at 5/min: over 60 s, 5 more.
    let later = 0;
    for (let t = 1_000; t <= 60_000; t += 1_000) {
      const d = takeToken(state, rate, t);
      state = d.state;
      if (d.granted) later++;
    }
    expect(later).toBe(5);
    expect(fullAfterMs(rate)).toBe(60_000);
  });
});

describe("rate spec (SLAUDE_CALL_RATE_*)", () => {
  it.each([
    ["60", 60, 60 / 60_000],
    ["60/min", 60, 60 / 60_000],
    ["10/s", 10, 10 / 1_000],
    ["3600/h", 3600, 3600 / 3_600_000],
    [" 5/minute ", 5, 5 / 60_000],
  ])("%s", (spec, burst, perMs) => {
    const r = rateSpec.parse(spec);
    expect(r.burst).toBe(burst);
    expect(r.perMs).toBeCloseTo(perMs, 12);
  });
  it.each(["0", "-1", "1.5/min", "10/day", "abc", "", "10 per min", "99999999"])("refuses %j", (spec) => {
    expect(rateSpec.safeParse(spec).success).toBe(false);
  });
});
