import type { CallRateVerdict } from "../limits/call-rate.js";
import type { CallOutcome } from "./answer.js";
import { type GatheredFacts, gatherCallFacts } from "./call-facts.js";
import type { CallPlan } from "./call-plan.js";
import type { BrokerDeps } from "./deps.js";
import type { FactsAhead } from "./tool-request.js";

// The first stage of a call: its call rate, and the policy's facts gathered around it. With buckets
// in this process the rate comes first (it costs nothing to wait for). With shared (PostgreSQL)
// buckets a call the policy lets run takes its tokens in the statement that commits its write-ahead
// row (call-start.ts), so the rate costs no round trip of its own; any other decision is acted on
// only once the rate has been checked alone.

/** The call's rate-limited outcome for a refusing verdict: the time a retry can succeed, and whose rate. */
export function limitedOutcome(d: Pick<BrokerDeps, "clock">, v: Extract<CallRateVerdict, { ok: false }>): CallOutcome {
  const retryAfterSeconds = Math.max(1, Math.ceil((v.retryAt - d.clock.now()) / 1000));
  return {
    kind: "failed",
    code: "rate_limited",
    facts: { retryAt: v.retryAt, retryAfterSeconds, rateScope: v.limit === "call_rate_team" ? "team" : "user" },
  };
}

/**
 * The call rate of the caller and their team: over it, the call is refused with the time a retry
 * can succeed. No audit row: a flood's refusals must cost no database write (the metric and the
 * call.ended log line record them).
 */
export async function rateStage(
  d: Pick<BrokerDeps, "callRate" | "clock">,
  plan: CallPlan,
): Promise<CallOutcome | undefined> {
  if (!d.callRate || !plan.caller) return undefined;
  const v = await d.callRate.check(plan.thread.teamId, plan.caller);
  return v.ok ? undefined : limitedOutcome(d, v);
}

/** The facts, and whether the call's rate is still to be checked (`rate: "pending"`), else done. */
export type Admission =
  | { readonly facts: GatheredFacts; readonly rate: "checked" | "pending" }
  | { readonly limited: CallOutcome };

/**
 * The rate stage and the facts. With buckets that take a call's tokens with its started row, the
 * facts are gathered at once and the rate is left `pending` (the run stage checks it with the row,
 * any other outcome checks it alone first); a caller this replica has just refused is checked alone
 * first, so a flood reads nothing. `ahead`: the facts the MCP endpoint read ahead for this request.
 * `d` is the call's view of the deps (its logger carries the call's ids).
 */
export async function admit(d: BrokerDeps, plan: CallPlan, ahead?: FactsAhead): Promise<Admission> {
  const gate = d.callRate;
  if (gate?.appendsWithTake && plan.caller && !gate.refusedRecently(plan.thread.teamId, plan.caller))
    return { facts: await gatherCallFacts(d, plan, ahead), rate: "pending" };
  const limited = await rateStage(d, plan);
  return limited ? { limited } : { facts: await gatherCallFacts(d, plan, ahead), rate: "checked" };
}
