import type { CallFacts } from "../policy/resolve.js";
import type { CallOutcome } from "./answer.js";
import { gatherCallFacts } from "./call-facts.js";
import type { CallPlan } from "./call-plan.js";
import type { BrokerDeps } from "./deps.js";

// The first stage of a call: its call rate, and the policy's facts gathered around it (on
// PostgreSQL while the bucket statement is on its way).

/**
 * The call rate of the caller and their team, before any lookup: over it, the call is refused
 * with the time a retry can succeed. No audit row: a flood's refusals must cost no database write
 * (the metric and the call.ended log line record them).
 */
export async function rateStage(
  d: Pick<BrokerDeps, "callRate" | "clock">,
  plan: CallPlan,
): Promise<CallOutcome | undefined> {
  if (!d.callRate || !plan.caller) return undefined;
  const v = await d.callRate.check(plan.thread.teamId, plan.caller);
  if (v.ok) return undefined;
  const retryAfterSeconds = Math.max(1, Math.ceil((v.retryAt - d.clock.now()) / 1000));
  return {
    kind: "failed",
    code: "rate_limited",
    facts: { retryAt: v.retryAt, retryAfterSeconds, rateScope: v.limit === "call_rate_team" ? "team" : "user" },
  };
}

/**
 * The rate stage, then the facts. With shared (PostgreSQL) buckets the facts' database reads (the
 * pin gate, the caller's own row) are sent while the bucket statement runs, so their round trips
 * overlap; everything else of the facts (membership, candidates) waits for the rate verdict. A
 * refused call discards what was read (a failed read included) and writes nothing more than before;
 * a caller this replica has just refused is checked alone first, so a flood reads nothing ahead.
 * `d` is the call's view of the deps (its logger carries the call's ids).
 */
export async function admittedFacts(d: BrokerDeps, plan: CallPlan): Promise<CallFacts | { limited: CallOutcome }> {
  const gate = d.callRate;
  if (!gate || gate.local || !plan.caller || gate.refusedRecently(plan.thread.teamId, plan.caller)) {
    const limited = await rateStage(d, plan);
    return limited ? { limited } : gatherCallFacts(d, plan);
  }
  const rate = rateStage(d, plan);
  const facts = gatherCallFacts(
    d,
    plan,
    rate.then(
      (limited) => limited === undefined,
      () => false,
    ),
  );
  // A refused (or failed) rate check answers alone: the facts' own failure is then not the call's.
  facts.catch(() => {});
  const limited = await rate;
  return limited ? { limited } : facts;
}
