import type { AuditEvent } from "../audit/event.js";
import type { CallDecision } from "../policy/resolve.js";
import type { CallOutcome } from "./answer.js";
import { appendOrLog } from "./call-audit.js";
import { auditBase, type CallPlan } from "./call-plan.js";
import type { CallTrace } from "./call-trace.js";
import type { BrokerDeps } from "./deps.js";
import type { FailureCode, MessageFacts } from "./outcome.js";

// A call that does not run: the outcome it is answered with and its `call_denied` audit row.

/** The outcome of a call that failed with `code`, and the facts its message names. */
export const failed = (code: FailureCode, facts: MessageFacts = {}): CallOutcome => ({ kind: "failed", code, facts });

/** A refusal of the policy, with the facts its message names and its audit row. */
export function refuseCall(
  d: Pick<BrokerDeps, "registry" | "clock" | "store" | "metrics">,
  plan: CallPlan,
  trace: CallTrace,
  r: Extract<CallDecision, { kind: "refuse" }>,
): Promise<CallOutcome> {
  if ("pin" in r) return denyCall(d, plan, trace, r.code, {}, { decision: `pin_${r.pin}` });
  const names = () => d.registry.list().map((s) => s.name);
  const known = r.code === "unknown_service" ? { detail: names().join(", ") } : {};
  const owner = r.ownerUserId ? { ownerUserId: r.ownerUserId } : {};
  const turn = r.turnUser ? { turnUser: r.turnUser } : {};
  return denyCall(d, plan, trace, r.code, { ...turn, ...owner, ...known }, owner);
}

/** A call that did not run: its `call_denied` row, then the refusal (which stands even if the row cannot be written). */
export async function denyCall(
  d: Pick<BrokerDeps, "clock" | "store" | "metrics">,
  plan: CallPlan,
  trace: CallTrace,
  code: FailureCode,
  facts: MessageFacts = {},
  audit: Partial<AuditEvent> = {},
): Promise<CallOutcome> {
  const row: AuditEvent = {
    at: d.clock.now(),
    event: "call_denied",
    ...auditBase(plan),
    decision: code,
    errorCode: code,
    durationMs: Math.round(trace.elapsedMs()),
    ...audit,
  };
  await appendOrLog(d.store.audit, trace.log, [row], d.metrics);
  return failed(code, facts);
}
