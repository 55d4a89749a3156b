import { describe, expect, it } from "vitest";
import { OUTCOMES, type Outcome, outcomeOf } from "../../src/activity/outcome.js";
import { MINUTE_MS, percentile, summarise, windowEndingAt } from "../../src/activity/summary.js";
import type { CallSample } from "../../src/audit/event.js";

// The Activity figures against an independent oracle: the outcome of every row shape, the
// nearest-rank percentile computed by counting, and generated hours bucketed minute by minute.

const T0 = Date.UTC(2026, 11, 1, 10, 0, 0);

function row(
  at: number,
  event: CallSample["event"],
  decision: string | null,
  errorCode: string | null,
  durationMs: number | null,
): CallSample {
  return { at, event, decision, errorCode, durationMs };
}

describe("outcomeOf", () => {
  const table: [CallSample["event"], string | null, string | null, Outcome][] = [
    ["call", "own", null, "own"],
    ["call", "grant", null, "borrowed"],
    ["call", "shared", null, "borrowed"],
    ["call", "approval_once", null, "borrowed"],
    ["call", "approval_thread", null, "borrowed"],
    ["call", "own", "vendor_error", "failed"],
    ["call", "grant", "vendor_tool_error", "failed"],
    ["call", "approval_once", "connection_unusable", "failed"],
    ["call_denied", "needs_connect", "needs_connect", "refused"],
    ["call_denied", "not_member", "not_member", "refused"],
    ["call_denied", "denied", "denied", "refused"],
    ["call_denied", "pin_quarantined", "tool_quarantined", "refused"],
  ];
  it.each(table)("%s route %s error %s is %s", (event, decision, errorCode, outcome) => {
    expect(outcomeOf(row(T0, event, decision, errorCode, 1))).toBe(outcome);
  });
});

/** The smallest value v of `xs` with at least p% of xs <= v: nearest rank, by counting. */
function oraclePercentile(xs: readonly number[], p: number): number | null {
  if (!xs.length) return null;
  const candidates = [...new Set(xs)].sort((a, b) => a - b);
  return candidates.find((v) => xs.filter((x) => x <= v).length * 100 >= p * xs.length)!;
}

/** A deterministic generator (mulberry32), so a failure names its seed. */
function rng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe("percentile", () => {
  it.each([
    [[], 50, null],
    [[7], 50, 7],
    [[7], 95, 7],
    [[1, 2], 50, 1],
    [[1, 2], 95, 2],
    [[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 50, 5],
    [[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 95, 10],
    [Array.from({ length: 20 }, (_, i) => i + 1), 95, 19],
  ])("of %j at p%d is %s", (xs, p, want) => {
    expect(percentile(xs, p)).toBe(want);
  });

  it("agrees with the counting oracle on generated samples", () => {
    for (let seed = 1; seed <= 200; seed++) {
      const r = rng(seed);
      const xs = Array.from({ length: Math.floor(r() * 40) }, () => Math.floor(r() * 500));
      const sorted = [...xs].sort((a, b) => a - b);
      for (const p of [50, 95]) expect(percentile(sorted, p), `seed ${seed} p${p}`).toBe(oraclePercentile(xs, p));
    }
  });
});

describe("windowEndingAt", () => {
  it("is the whole minutes ending with the minute of now, at most 60", () => {
    const now = T0 + 30 * MINUTE_MS + 12_345;
    expect(windowEndingAt(now)).toEqual({ since: T0 - 29 * MINUTE_MS, until: T0 + 31 * MINUTE_MS, minutes: 60 });
    expect(windowEndingAt(now, 5)).toEqual({ since: T0 + 26 * MINUTE_MS, until: T0 + 31 * MINUTE_MS, minutes: 5 });
    expect(windowEndingAt(now, 500).minutes).toBe(60);
    expect(windowEndingAt(now, 0).minutes).toBe(1);
  });
});

describe("summarise", () => {
  it("buckets a generated hour exactly as the oracle does, minute by minute", () => {
    const routes = ["own", "grant", "shared", "approval_once", "approval_thread"];
    for (let seed = 1; seed <= 60; seed++) {
      const r = rng(seed);
      const w = windowEndingAt(T0 + Math.floor(r() * 3_600_000));
      // Rows spread a little beyond the window on both sides: those must be left out.
      const rows = Array.from({ length: Math.floor(r() * 300) }, () => {
        const at = w.since - 2 * MINUTE_MS + Math.floor(r() * (w.until - w.since + 4 * MINUTE_MS));
        const kind = r();
        if (kind < 0.2) return row(at, "call_denied", "needs_connect", "needs_connect", Math.floor(r() * 5));
        const route = routes[Math.floor(r() * routes.length)]!;
        return row(at, "call", route, kind < 0.35 ? "vendor_error" : null, r() < 0.05 ? null : Math.floor(r() * 2000));
      });
      const s = summarise(rows, w);
      expect(s.minutes).toHaveLength(60);
      for (const [i, m] of s.minutes.entries()) {
        const start = w.since + i * MINUTE_MS;
        const inMinute = rows.filter((x) => x.at >= start && x.at < start + MINUTE_MS);
        expect(m.start).toBe(start);
        for (const o of OUTCOMES)
          expect(m.counts[o], `seed ${seed} minute ${i} ${o}`).toBe(inMinute.filter((x) => outcomeOf(x) === o).length);
        const timed = inMinute.filter((x) => x.event === "call" && x.durationMs !== null).map((x) => x.durationMs!);
        expect([m.p50Ms, m.p95Ms, m.timed]).toEqual([
          oraclePercentile(timed, 50),
          oraclePercentile(timed, 95),
          timed.length,
        ]);
      }
      const inWindow = rows.filter((x) => x.at >= w.since && x.at < w.until);
      const timed = inWindow.filter((x) => x.event === "call" && x.durationMs !== null).map((x) => x.durationMs!);
      expect(s.calls).toBe(inWindow.length);
      expect(s.latency).toEqual({
        p50Ms: oraclePercentile(timed, 50),
        p95Ms: oraclePercentile(timed, 95),
        timed: timed.length,
      });
      expect(s.partialBefore).toBeNull();
    }
  });

  it("counts refusals but leaves their durations out of latency", () => {
    const w = windowEndingAt(T0);
    const s = summarise(
      [
        row(T0, "call", "own", null, 100),
        row(T0 + 1, "call_denied", "not_member", "not_member", 1),
        row(T0 + 2, "call", "grant", null, 300),
      ],
      w,
    );
    expect(s.totals).toEqual({ own: 1, borrowed: 1, refused: 1, failed: 0 });
    expect(s.latency).toEqual({ p50Ms: 100, p95Ms: 300, timed: 2 });
    expect(s.minutes.at(-1)).toMatchObject({ start: T0, p50Ms: 100, p95Ms: 300 });
  });

  it("marks a truncated read as partial from its oldest row", () => {
    const w = windowEndingAt(T0);
    expect(
      summarise([row(T0 - 5 * MINUTE_MS, "call", "own", null, 10), row(T0, "call", "own", null, 10)], w, true)
        .partialBefore,
    ).toBe(T0 - 5 * MINUTE_MS);
    expect(summarise([], w, true).partialBefore).toBeNull();
  });
});
