import type { CallSample } from "../audit/event.js";
import { isTimed, noCalls, type OutcomeCounts, outcomeOf } from "./outcome.js";

// The Activity figures: calls per minute by outcome and latency p50/p95, for the whole window and
// per minute. Pure: rows in, figures out, the window given. At most 60 one-minute buckets.

/** One bucket's width. */
export const MINUTE_MS = 60_000;

/** The most buckets a window has (one hour). */
export const MAX_MINUTES = 60;

/** A window of whole minutes ending with the minute that holds `now`. */
export interface ActivityWindow {
  /** Start of the first minute (inclusive). */
  readonly since: number;
  /** End of the last minute (exclusive). */
  readonly until: number;
  readonly minutes: number;
}

/** The p50 and p95 of call durations, in milliseconds (null with no timed call). */
export interface Latency {
  readonly p50Ms: number | null;
  readonly p95Ms: number | null;
  /** How many durations they are drawn from. */
  readonly timed: number;
}

/** One minute of the window. */
export interface ActivityMinute extends Latency {
  /** The minute's start (epoch ms). */
  readonly start: number;
  readonly counts: OutcomeCounts;
}

/** The figures of one window. */
export interface ActivitySummary {
  readonly since: number;
  readonly until: number;
  /** Every minute of the window, oldest first, empty ones included. */
  readonly minutes: readonly ActivityMinute[];
  readonly totals: OutcomeCounts;
  readonly calls: number;
  readonly latency: Latency;
  /** Set when the window held more rows than one read takes: rows at or before this time may be missing. */
  readonly partialBefore: number | null;
}

/** The window of `minutes` (1..60) whole minutes ending with the minute of `now`. */
export function windowEndingAt(now: number, minutes: number = MAX_MINUTES): ActivityWindow {
  const n = Math.max(1, Math.min(Math.floor(minutes), MAX_MINUTES));
  const until = Math.floor(now / MINUTE_MS) * MINUTE_MS + MINUTE_MS;
  return { since: until - n * MINUTE_MS, until, minutes: n };
}

/** The nearest-rank percentile `p` (0 < p <= 100) of ascending `sorted`; null when it is empty. */
export function percentile(sorted: readonly number[], p: number): number | null {
  if (!sorted.length) return null;
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1]!;
}

function latencyOf(durations: number[]): Latency {
  const sorted = durations.sort((a, b) => a - b);
  return { p50Ms: percentile(sorted, 50), p95Ms: percentile(sorted, 95), timed: sorted.length };
}

/** Buckets `samples` into the minutes of `w` (rows outside it are ignored); `truncated` marks a partial read. */
export function summarise(samples: readonly CallSample[], w: ActivityWindow, truncated = false): ActivitySummary {
  const counts = Array.from({ length: w.minutes }, noCalls);
  const durations = Array.from({ length: w.minutes }, (): number[] => []);
  const totals = noCalls();
  const all: number[] = [];
  let oldest = Number.POSITIVE_INFINITY;
  for (const s of samples) {
    if (!(s.at >= w.since && s.at < w.until)) continue;
    const i = Math.floor((s.at - w.since) / MINUTE_MS);
    const outcome = outcomeOf(s);
    counts[i]![outcome]++;
    totals[outcome]++;
    oldest = Math.min(oldest, s.at);
    if (isTimed(s)) {
      durations[i]!.push(s.durationMs);
      all.push(s.durationMs);
    }
  }
  const minutes = counts.map(
    (c, i): ActivityMinute => ({ start: w.since + i * MINUTE_MS, counts: c, ...latencyOf(durations[i]!) }),
  );
  const calls = totals.own + totals.borrowed + totals.refused + totals.failed;
  return {
    since: w.since,
    until: w.until,
    minutes,
    totals,
    calls,
    latency: latencyOf(all),
    partialBefore: truncated && calls ? oldest : null,
  };
}
