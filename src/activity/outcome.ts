import type { CallSample } from "../audit/event.js";

// What became of one call, in the four words of the Activity view: it ran on the caller's own
// connection, it ran on someone else's (a grant, an owner's approval, a shared connection), the
// broker refused it before anything ran, or it was let through and failed (the vendor's error, an
// unusable credential, a tool that answered isError).

/** The outcomes the Activity view counts, in the order it draws them. */
export const OUTCOMES = ["own", "borrowed", "refused", "failed"] as const;

/** One call's outcome. */
export type Outcome = (typeof OUTCOMES)[number];

/** Calls per outcome. */
export type OutcomeCounts = Record<Outcome, number>;

/** Zero calls of every outcome. */
export function noCalls(): OutcomeCounts {
  return { own: 0, borrowed: 0, refused: 0, failed: 0 };
}

/**
 * The outcome of a call's row: a `call_denied` row is refused; a `call` row with an error code
 * failed; one without ran, on the caller's own connection when its route is `own` and on a
 * connection the caller does not own for every other route (grant, shared, approval_once, approval_thread).
 */
export function outcomeOf(s: CallSample): Outcome {
  if (s.event === "call_denied") return "refused";
  if (s.errorCode !== null) return "failed";
  return s.decision === "own" ? "own" : "borrowed";
}

/** Whether the row's duration counts toward latency: the calls that got past the broker's checks. */
export function isTimed(s: CallSample): s is CallSample & { durationMs: number } {
  return s.event === "call" && s.durationMs !== null && Number.isFinite(s.durationMs) && s.durationMs >= 0;
}
