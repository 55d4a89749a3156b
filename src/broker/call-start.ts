import type { Service } from "../config/registry.js";
import type { RowProof } from "../domain/row-proof.js";
import type { CallRateVerdict } from "../limits/call-rate.js";
import type { PlannedPin } from "../pinning/policy.js";
import type { PinRead } from "../pinning/service.js";
import type { CallFacts } from "../policy/resolve.js";
import type { Connection } from "../store/records.js";
import type { CallOutcome, RanVia } from "./answer.js";
import { limitedOutcome } from "./call-admission.js";
import { CallAudit } from "./call-audit.js";
import { auditBase, type CallPlan } from "./call-plan.js";
import type { CallTrace } from "./call-trace.js";
import type { CompletionBacklog } from "./completion-backlog.js";
import type { BrokerDeps } from "./deps.js";
import { UnprovedAttempt } from "./tool-request.js";

// The start of a decided call's run: the chosen connection read again (a revoke since the decision
// wins), the write-ahead `call_started` row committed, and the tool's pin read for the run-stage
// check, all three at once (on PostgreSQL three round trips in the time of one). With shared rate
// buckets, a call whose rate is still to be checked takes its tokens in the very statement that
// commits its started row: refused, it has no row and answers rate_limited. Nothing reaches the
// vendor before all three are in; a row found unusable then ends the call with its completion row,
// after its started row.

/** A plan whose service is known and whose caller is set: what the run and approval stages need. */
export type Runnable = CallPlan & { readonly service: Service; readonly caller: string };

/** How a decided call runs: on which connection, how it was allowed, and by whom. */
export interface RunOrder {
  readonly connectionId: string;
  /** The connection's owner as the decision saw it (null: the shared identity). */
  readonly ownerUserId: string | null;
  readonly via: RanVia;
  readonly approver?: string;
  /** Which class rule the pin stage applied: checked again on the leased vendor. */
  readonly planned: PlannedPin;
  /** The call's rate is still to be checked: its tokens are taken with the started row (see admit). */
  readonly chargeWithStart?: boolean;
  /** The pin read the decision's gate was made from: the run-stage check uses it while it is fresh. */
  readonly pinRead?: PinRead;
}

/** What the run goes on with: the row as read now, the call's audit, and the started row's fate. */
export interface RunStart {
  readonly conn: Connection | undefined;
  readonly audit: CallAudit;
  readonly started: "ok" | "store_unavailable" | "audit_unavailable";
  /** The pin read ahead for the run-stage check (undefined when the row is of another team, or none was read). */
  readonly pinRead: PinRead | undefined;
}

/** The call's rate refused it (with `chargeWithStart`): no row was written, and this is its answer. */
export interface RateRefused {
  readonly limited: CallOutcome;
}

/** The owner of the connection `id` among the facts the decision was made from (null: the shared identity). */
export function ownerInFacts(facts: Pick<CallFacts, "own" | "others" | "shared">, id: string): string | null {
  if (facts.own?.id === id) return facts.own.ownerUserId;
  return facts.others.find((o) => o.id === id)?.ownerUserId ?? null;
}

/**
 * Reads the row again, writes the started row and reads the pin, together. A failed re-read is
 * thrown once the started row has settled (the database away: the call answers store_unavailable,
 * and a started row that was written gets its completion through the backlog).
 */
export async function startRun(
  d: BrokerDeps,
  completions: CompletionBacklog,
  plan: Runnable,
  order: RunOrder,
  trace: CallTrace,
  proofs?: readonly RowProof[],
): Promise<RunStart | RateRefused> {
  let conn: Connection | undefined;
  const audit = new CallAudit(
    d.store.audit,
    d.log,
    (e) => ({
      at: d.clock.now(),
      event: "call",
      ...auditBase(plan),
      ownerUserId: conn?.ownerUserId ?? order.ownerUserId,
      connectionId: order.connectionId,
      decision: order.via,
      approverUserId: order.approver ?? null,
      durationMs: Math.round(trace.elapsedMs()),
      ...e,
    }),
    completions,
    { callId: plan.callId, metrics: d.metrics },
  );
  const reread = d.store.connections.get(order.connectionId);
  reread.catch(() => {});
  // The decision's own read of the pin while it is fresh (no pin written here since, just read), else a new one.
  const pinRead =
    order.pinRead && d.pins.fresh(order.pinRead)
      ? order.pinRead
      : d.pins.read({ teamId: plan.thread.teamId, service: plan.service.name }, plan.tool);
  // Write-ahead: nothing reaches the vendor unless its call_started row is committed.
  let verdict: CallRateVerdict | "unproved" | undefined;
  const gate = order.chargeWithStart ? d.callRate : undefined;
  // Remembered rows (the warm memo) are proved in the very statement that commits the row.
  if (proofs && !gate) throw new UnprovedAttempt();
  const started = await audit.started(
    gate &&
      (async (rows) => {
        verdict = proofs
          ? await gate.checkAndAppendProved(plan.thread.teamId, plan.caller, rows, proofs)
          : await gate.checkAndAppend(plan.thread.teamId, plan.caller, rows);
        return verdict !== "unproved" && verdict.ok;
      }),
  );
  if (started === "refused" && verdict === "unproved") {
    reread.catch(() => {});
    throw new UnprovedAttempt();
  }
  if (started === "refused") {
    if (!verdict || verdict === "unproved" || verdict.ok)
      throw new Error("a start refused without a refusing rate verdict");
    return { limited: limitedOutcome(d, verdict) };
  }
  try {
    conn = await reread;
  } catch (err) {
    // Its completion goes through the backlog (kept until the database is back), not waited for here.
    if (started === "ok") void audit.completed({ errorCode: "store_unavailable" });
    throw err;
  }
  return { conn, audit, started, pinRead: conn?.teamId === plan.thread.teamId ? pinRead : undefined };
}
