import type { AuditEvent } from "../audit/event.js";
import type { Approval } from "../store/records.js";

/** The audit row of one step of an approval's life (asked, decided, a refused click, the grant it made). */
export function approvalAudit(
  a: Approval,
  event: "approval_requested" | "approval_decided" | "approval_rejected_click" | "grant_created",
  decision: string | null,
  at: number,
  approver?: string,
): AuditEvent {
  return {
    at,
    event,
    teamId: a.teamId,
    channelId: a.channelId,
    threadTs: a.threadTs,
    callerUserId: a.borrowerUserId,
    ownerUserId: a.ownerUserId,
    connectionId: a.connectionId,
    service: a.service,
    tool: a.tool,
    argsHash: a.argsHash,
    decision,
    approverUserId: approver ?? null,
  };
}
