// The rows both store adapters read back and how each becomes a record: the SQLite and the
// PostgreSQL schemas name and type these columns alike, so one mapping serves both.
import type { AuditEvent } from "../audit/event.js";
import type { SealedSecret } from "../vault/aead.js";
import type { Approval, Connection, Grant, LoginSession } from "./records.js";
import type { StoredResultMeta } from "./result-repo.js";
import type { CandidateRow, ConnectionMeta, EndConnection } from "./store.js";

export interface ApprovalRow {
  id: string;
  nonce: string;
  connection_id: string;
  team_id: string;
  channel_id: string;
  thread_ts: string;
  owner_user_id: string;
  borrower_user_id: string;
  service: string;
  tool: string;
  args_hash: string;
  status: Approval["status"];
  created_at: number;
  expires_at: number;
  decided_at: number | null;
  decided_by: string | null;
  card_channel: string | null;
  card_ts: string | null;
}

export function toApproval(r: ApprovalRow): Approval {
  return {
    id: r.id,
    nonce: r.nonce,
    connectionId: r.connection_id,
    teamId: r.team_id,
    channelId: r.channel_id,
    threadTs: r.thread_ts,
    ownerUserId: r.owner_user_id,
    borrowerUserId: r.borrower_user_id,
    service: r.service,
    tool: r.tool,
    argsHash: r.args_hash,
    status: r.status,
    createdAt: r.created_at,
    expiresAt: r.expires_at,
    decidedAt: r.decided_at,
    decidedBy: r.decided_by,
    cardChannel: r.card_channel,
    cardTs: r.card_ts,
  };
}

/** The audit row of a pending approval expired by the store (at start-up, or by the reaper). */
export function approvalExpiredAudit(r: ApprovalRow, now: number, actor: "startup" | "reaper"): AuditEvent {
  return {
    at: now,
    event: "approval_decided",
    decision: "expired",
    teamId: r.team_id,
    channelId: r.channel_id,
    threadTs: r.thread_ts,
    callerUserId: r.borrower_user_id,
    ownerUserId: r.owner_user_id,
    connectionId: r.connection_id,
    service: r.service,
    tool: r.tool,
    argsHash: r.args_hash,
    actor,
  };
}

/** How the TTL job ends a live connection whose time is up: status, reason and its audit row. */
export function ttlExpiry(
  r: { id: string; team_id: string; owner_user_id: string | null; service: string },
  now: number,
): EndConnection {
  const audit: AuditEvent = {
    at: now,
    event: "connection_expired",
    teamId: r.team_id,
    ownerUserId: r.owner_user_id,
    connectionId: r.id,
    service: r.service,
    actor: "reaper",
  };
  return { status: "expired", reason: "ttl", at: now, actor: "reaper", audit: [audit] };
}

export interface GrantRow {
  id: string;
  connection_id: string;
  team_id: string;
  channel_id: string;
  thread_ts: string;
  owner_user_id: string;
  borrower_user_id: string;
  service: string;
  created_at: number;
  revoked_at: number | null;
  revoked_by: string | null;
}

export function toGrant(r: GrantRow): Grant {
  return {
    id: r.id,
    connectionId: r.connection_id,
    teamId: r.team_id,
    channelId: r.channel_id,
    threadTs: r.thread_ts,
    ownerUserId: r.owner_user_id,
    borrowerUserId: r.borrower_user_id,
    service: r.service,
    createdAt: r.created_at,
    revokedAt: r.revoked_at,
    revokedBy: r.revoked_by,
  };
}

export interface LoginRow {
  id: string;
  token_hash: string;
  team_id: string;
  user_id: string;
  service: string;
  scope: LoginSession["scope"];
  channel_id: string | null;
  thread_ts: string | null;
  status: LoginSession["status"];
  created_at: number;
  expires_at: number;
  opened_at: number | null;
  ended_at: number | null;
  connection_id: string | null;
  viewer_hash: string | null;
}

export function toSession(r: LoginRow): LoginSession {
  return {
    id: r.id,
    tokenHash: r.token_hash,
    teamId: r.team_id,
    userId: r.user_id,
    service: r.service,
    scope: r.scope,
    channelId: r.channel_id,
    threadTs: r.thread_ts,
    status: r.status,
    createdAt: r.created_at,
    expiresAt: r.expires_at,
    openedAt: r.opened_at,
    endedAt: r.ended_at,
    connectionId: r.connection_id,
    viewerHash: r.viewer_hash,
  };
}

export interface ResultRow {
  id: string;
  team_id: string;
  channel_id: string;
  thread_ts: string;
  owner_user_id: string;
  call_id: string;
  service: string;
  tool: string;
  size_bytes: number;
  created_at: number;
  expires_at: number;
  key_id: string;
  nonce: Buffer;
  ciphertext: Buffer;
  tag: Buffer;
}

export const META_COLUMNS =
  "id, team_id, channel_id, thread_ts, owner_user_id, call_id, service, tool, size_bytes, created_at, expires_at";

export function toMeta(r: Omit<ResultRow, "key_id" | "nonce" | "ciphertext" | "tag">): StoredResultMeta {
  return {
    id: r.id,
    teamId: r.team_id,
    channelId: r.channel_id,
    threadTs: r.thread_ts,
    ownerUserId: r.owner_user_id,
    callId: r.call_id,
    service: r.service,
    tool: r.tool,
    sizeBytes: r.size_bytes,
    createdAt: r.created_at,
    expiresAt: r.expires_at,
  };
}

/** A candidates-query row: a connection without its sealed secret, with its grant standing. */
export type CandidateMetaRow = ConnectionMetaColumns & {
  /** 1/0 from SQLite, a boolean from PostgreSQL. */
  granted: number | boolean;
  grants_given: number;
};

export function toCandidate(r: CandidateMetaRow): CandidateRow {
  return {
    connection: toConnectionMeta(r),
    granted: r.granted === 1 || r.granted === true,
    grantsGiven: r.grants_given,
  };
}

/** The columns of a connection other than its sealed secret (what listings and candidates read). */
type ConnectionMetaColumns = Omit<ConnectionRow, "key_id" | "secret_nonce" | "secret_ct" | "secret_tag">;

function toConnectionMeta(r: ConnectionMetaColumns): ConnectionMeta {
  return {
    id: r.id,
    teamId: r.team_id,
    ownerUserId: r.owner_user_id,
    service: r.service,
    scope: r.scope,
    channelId: r.channel_id,
    threadTs: r.thread_ts,
    status: r.status,
    label: r.label,
    createdBy: r.created_by,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    expiresAt: r.expires_at,
    endedAt: r.ended_at,
    endedReason: r.ended_reason,
  };
}

/** A connections row as both adapters read it (the sealed secret in four columns, all null when wiped). */
export interface ConnectionRow {
  id: string;
  team_id: string;
  owner_user_id: string | null;
  service: string;
  scope: Connection["scope"];
  channel_id: string | null;
  thread_ts: string | null;
  status: Connection["status"];
  key_id: string | null;
  secret_nonce: Buffer | null;
  secret_ct: Buffer | null;
  secret_tag: Buffer | null;
  label: string | null;
  created_by: string;
  created_at: number;
  updated_at: number;
  expires_at: number;
  ended_at: number | null;
  ended_reason: string | null;
}

/** Maps a row to the domain object; snake_case stays in here. */
export function toConnection(r: ConnectionRow): Connection {
  const sealed: SealedSecret | null =
    r.secret_ct && r.secret_nonce && r.secret_tag && r.key_id
      ? { keyId: r.key_id, nonce: r.secret_nonce, ciphertext: r.secret_ct, tag: r.secret_tag }
      : null;
  return { ...toConnectionMeta(r), sealed };
}
