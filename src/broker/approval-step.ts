import type { WaitOutcome } from "../approvals/approval-service.js";
import { cardFacts } from "../approvals/card.js";
import type { Service } from "../config/registry.js";
import type { ApprovalDecision } from "../events/call-event.js";
import type { Redactor } from "../hygiene/redact.js";
import { type CallPlan, eventBase } from "./call-plan.js";
import type { BrokerDeps, CallExtra } from "./deps.js";

// The approval stage of a borrowed call: the owner is asked with a card built from the planned
// arguments (redacted with the owner's own credential) and the call waits, sending the caller a
// progress heartbeat, until the owner decides, the approval expires or the caller cancels. The
// question and its answer are the call's approval.asked / approval.decided events.

/** How often a waiting call tells its caller it is still waiting. */
export const APPROVAL_HEARTBEAT_MS = 10_000;

/** One question to an owner: the plan (with its known service and caller), whose connection, and why. */
export interface OwnerQuestion {
  readonly plan: CallPlan & { readonly service: Service; readonly caller: string };
  readonly connectionId: string;
  readonly ownerUserId: string;
  readonly reason: "no_grant" | "write_under_grant";
  /** The owner's credential's redactor: the card never shows it. */
  readonly redactor: Redactor;
}

/** Asks the owner and waits for the outcome; the wait is counted apart from broker time. */
export async function askOwner(
  d: Pick<BrokerDeps, "approvals" | "clock" | "events">,
  q: OwnerQuestion,
  extra: CallExtra,
): Promise<WaitOutcome> {
  const { plan } = q;
  const write = plan.toolClass.write;
  let ticks = 0;
  const heartbeat = extra.progress
    ? d.clock.setInterval(
        () =>
          void extra
            .progress?.({ progress: ++ticks, message: `waiting for <@${q.ownerUserId}> to approve` })
            .catch(() => {}),
        APPROVAL_HEARTBEAT_MS,
        { unref: true },
      )
    : undefined;
  const t0 = performance.now();
  d.events.emit({
    type: "approval.asked",
    ...eventBase(plan, d.clock.now()),
    ownerUserId: q.ownerUserId,
    connectionId: q.connectionId,
    reason: q.reason,
  });
  // A throw (the store, the channel) means the owner could not be asked.
  let decision: ApprovalDecision = "unavailable";
  try {
    const outcome = await d.approvals.requestAndWait(
      {
        thread: plan.thread,
        connectionId: q.connectionId,
        ownerUserId: q.ownerUserId,
        borrowerUserId: plan.caller,
        service: plan.service.name,
        tool: plan.tool,
        argsHash: plan.argsHash,
      },
      {
        borrowerUserId: plan.caller,
        ownerUserId: q.ownerUserId,
        service: plan.service.name,
        serviceDisplayName: plan.service.displayName,
        tool: plan.tool,
        write,
        reason: q.reason,
        ...cardFacts(plan.args, q.redactor, write),
        teamId: plan.thread.teamId,
        channelId: plan.thread.channelId,
        threadTs: plan.thread.threadTs,
      },
      extra.signal,
    );
    decision = outcome.kind;
    return outcome;
  } finally {
    heartbeat?.cancel();
    const waitedMs = performance.now() - t0;
    if (extra.trace) extra.trace.approvalMs += waitedMs;
    d.events.emit({
      type: "approval.decided",
      ...eventBase(plan, d.clock.now()),
      ownerUserId: q.ownerUserId,
      connectionId: q.connectionId,
      decision,
      waitedMs: Math.round(waitedMs),
    });
  }
}
