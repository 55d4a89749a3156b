import { randomBytes } from "node:crypto";
import { newId } from "../domain/ids.js";
import type { ThreadRef } from "../domain/thread.js";
import type { Approval, Grant } from "../store/records.js";
import type { Store } from "../store/store.js";
import { approvalAudit } from "./audit-row.js";

/** The call an approval is about. */
export interface ApprovalSubject {
  readonly thread: ThreadRef;
  readonly connectionId: string;
  readonly ownerUserId: string;
  readonly borrowerUserId: string;
  readonly service: string;
  readonly tool: string;
  readonly argsHash: string;
}

/** A new pending approval for `subject`, with a fresh id and nonce, expiring `timeoutMs` after `now`. */
export function pendingApproval(subject: ApprovalSubject, now: number, timeoutMs: number): Approval {
  return {
    id: newId("appr"),
    nonce: randomBytes(16).toString("base64url"),
    connectionId: subject.connectionId,
    teamId: subject.thread.teamId,
    channelId: subject.thread.channelId,
    threadTs: subject.thread.threadTs,
    ownerUserId: subject.ownerUserId,
    borrowerUserId: subject.borrowerUserId,
    service: subject.service,
    tool: subject.tool,
    argsHash: subject.argsHash,
    status: "pending",
    createdAt: now,
    expiresAt: now + timeoutMs,
    decidedAt: null,
    decidedBy: null,
    cardChannel: null,
    cardTs: null,
  };
}

/** The grant an Allow for the thread creates: the borrower may use the connection in that thread. */
export function threadGrant(a: Approval, now: number): Omit<Grant, "revokedAt" | "revokedBy"> {
  const { connectionId, teamId, channelId, threadTs, ownerUserId, borrowerUserId, service } = a;
  return {
    id: newId("grant"),
    connectionId,
    teamId,
    channelId,
    threadTs,
    ownerUserId,
    borrowerUserId,
    service,
    createdAt: now,
  };
}

/** Why a click the store refused did not apply, from the approval `b` as read again after the refusal. */
export function refusedClickReason(
  a: Approval,
  b: Approval,
  clicker: string,
  now: number,
): "not_owner" | "expired" | "already_decided" {
  if (clicker !== a.ownerUserId) return "not_owner";
  if (b.status === "expired" || b.expiresAt <= now) return "expired";
  return b.status !== "pending" ? "already_decided" : "expired";
}

/** Undoes what an unoffered decision made elsewhere granted, and audits the refusal. */
export async function refuseUnoffered(store: Store, a: Approval, now: number): Promise<void> {
  const by = a.decidedBy ?? a.ownerUserId;
  await store.audit.append([approvalAudit(a, "approval_rejected_click", "not_offered", now, by)]);
  if (a.status !== "allowed_thread") return;
  const grant = await store.grants.findLive(a.connectionId, a.borrowerUserId, {
    teamId: a.teamId,
    channelId: a.channelId,
    threadTs: a.threadTs,
  });
  if (!grant) return;
  await store.grants.revoke(grant.id, "broker", now, [
    {
      at: now,
      event: "grant_revoked",
      teamId: a.teamId,
      channelId: a.channelId,
      threadTs: a.threadTs,
      ownerUserId: a.ownerUserId,
      callerUserId: a.borrowerUserId,
      connectionId: a.connectionId,
      service: a.service,
      decision: "not_offered",
      actor: "broker",
    },
  ]);
}
