// The call-rate rule, on one screen: a token bucket as a pure function of its state, the time and
// its rate. The in-memory limiter (SQLite, one process) and the PostgreSQL statement
// (src/topology/postgres/rate-buckets-repo.ts) compute exactly this; the table test pins it.

/** A bucket's rate: `burst` tokens at most, refilled at `perMs` tokens a millisecond. */
export interface BucketRate {
  readonly burst: number;
  readonly perMs: number;
}

/** A bucket as stored: tokens left when it was last updated, and when that was. */
export interface BucketState {
  readonly tokens: number;
  readonly updatedAt: number;
}

/** One take of a token: granted (with the state to keep), or refused with the earliest time a retry can succeed. */
export type BucketDecision =
  | { readonly granted: true; readonly state: BucketState }
  | { readonly granted: false; readonly state: BucketState; readonly retryAt: number };

/** A bucket never seen (or swept because it was full) is full. */
export function fullBucket(rate: BucketRate, now: number): BucketState {
  return { tokens: rate.burst, updatedAt: now };
}

/** The tokens a bucket holds at `now`: refilled since its update, never above burst; a clock that went back refills nothing. */
export function refilled(state: BucketState, rate: BucketRate, now: number): number {
  const elapsed = Math.max(0, now - state.updatedAt);
  return Math.min(rate.burst, state.tokens + elapsed * rate.perMs);
}

/** When a bucket holding `tokens` (< 1) has one whole token again. */
export function retryAtFor(tokens: number, rate: BucketRate, now: number): number {
  return now + Math.max(1, Math.ceil((1 - tokens) / rate.perMs));
}

/** Takes one token from `state` (undefined: a full bucket) at `now`. */
export function takeToken(state: BucketState | undefined, rate: BucketRate, now: number): BucketDecision {
  const tokens = refilled(state ?? fullBucket(rate, now), rate, now);
  // The update time never moves back, so a replica whose clock lags cannot mint tokens.
  const updatedAt = Math.max(now, state?.updatedAt ?? now);
  if (tokens >= 1) return { granted: true, state: { tokens: tokens - 1, updatedAt } };
  return { granted: false, state: { tokens, updatedAt }, retryAt: retryAtFor(tokens, rate, now) };
}

/** How long an untouched bucket takes to be full again: after that it equals an absent one (and can be forgotten). */
export function fullAfterMs(rate: BucketRate): number {
  return Math.ceil(rate.burst / rate.perMs);
}
