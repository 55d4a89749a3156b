import type { AuditEvent, AuditEventKind } from "../audit/event.js";

// The lifecycle events beside a call's own: connections, approvals, logins and tool pins (each
// derived from the audit row that records it, so nothing is written twice and an event exists only
// for what committed), and vendor children and remote vendors (which have no audit row, emitted by
// the pool and the launcher). Like call events they carry ids, codes and times only: never
// arguments (not even their hash), results, credentials, tokens or login links.

/** An event derived from a committed audit row: one shape for every kind, unused fields null. */
export interface AuditLifecycleEvent {
  readonly type: AuditLifecycleType;
  readonly at: number;
  readonly teamId: string;
  /** The audit kind of the row it was derived from (`slaude-connect audit --event`). */
  readonly audit: AuditEventKind;
  readonly channelId: string | null;
  readonly threadTs: string | null;
  /** The user served: the borrower of an approval, the person logging in. */
  readonly callerUserId: string | null;
  readonly ownerUserId: string | null;
  readonly approverUserId: string | null;
  readonly connectionId: string | null;
  readonly service: string | null;
  readonly tool: string | null;
  /** The row's outcome code: an approval's decision, a login's failure reason, a pin change. */
  readonly decision: string | null;
  /** Who acted when it was not a Slack user: `broker`, `reaper`, `startup`, `vendor`, `cli`; or a Slack user id. */
  readonly actor: string | null;
  /** tool.* only: the SHA-256 of the tool definition concerned (what `registry accept --hash` takes). */
  readonly definitionHash: string | null;
}

/** Why a vendor child (or remote session) stopped. */
export type ChildStopReason =
  | "idle"
  | "evicted"
  | "revoked"
  | "crashed"
  | "limit"
  | "replaced"
  | "timeout"
  | "credential_unusable"
  | "shutdown";

/** Why a remote vendor cannot be used. */
export type RemoteUnavailableReason = "backoff" | "credential_rejected";

/** What a child or remote event carries besides its kind. */
interface VendorEventBase {
  readonly at: number;
  readonly teamId: string;
  readonly connectionId: string;
  readonly service: string;
  readonly transport: "stdio" | "remote";
}

/** A vendor's own lifecycle in this replica: started, stopped, a remote vendor lost and back. */
export type VendorLifecycleEvent =
  | (VendorEventBase & { readonly type: "child.started" })
  | (VendorEventBase & { readonly type: "child.stopped"; readonly reason: ChildStopReason })
  | (VendorEventBase & {
      readonly type: "remote.unavailable";
      readonly reason: RemoteUnavailableReason;
      /** The broker's own class of the error (`ECONNREFUSED`, `http_503`): never vendor text. */
      readonly error: string;
      /** When the next connect will be tried (backoff), else null. */
      readonly retryAt: number | null;
    })
  | (VendorEventBase & { readonly type: "remote.recovered" });

/** Every event kind derived from an audit row, and the audit kind each comes from. */
export const AUDIT_LIFECYCLE_TYPES = {
  "connection.created": "connection_created",
  "connection.replaced": "connection_replaced",
  "connection.refreshed": "connection_refreshed",
  "connection.needs_login": "connection_needs_login",
  "connection.expired": "connection_expired",
  "connection.revoked": "connection_revoked",
  "approval.requested": "approval_requested",
  "approval.answered": "approval_decided",
  "approval.expired": "approval_decided",
  "login.started": "login_started",
  "login.completed": "login_completed",
  "login.failed": "login_refused",
  "tool.pinned": "tool_pin",
  "tool.new": "tool_pin",
  "tool.quarantined": "tool_pin",
  "tool.accepted": "tool_pin",
  "tool.rejected": "tool_pin",
} as const satisfies Record<string, AuditEventKind>;

/** The kinds of audit-derived event. */
export type AuditLifecycleType = keyof typeof AUDIT_LIFECYCLE_TYPES;

/** The kinds of vendor event (no audit row). */
export const VENDOR_LIFECYCLE_TYPES = [
  "child.started",
  "child.stopped",
  "remote.unavailable",
  "remote.recovered",
] as const satisfies readonly VendorLifecycleEvent["type"][];

/** Which tool_pin decisions are events, and as what; the others (refusals, invalid clicks) are not. */
const PIN_EVENTS: Readonly<Record<string, AuditLifecycleType>> = {
  first_seen: "tool.pinned",
  restored: "tool.pinned",
  new: "tool.new",
  quarantined: "tool.quarantined",
  accepted: "tool.accepted",
  rejected: "tool.rejected",
};

/** The event kind of an audit row, or undefined when that row is no lifecycle event. */
function typeOf(row: AuditEvent): AuditLifecycleType | undefined {
  switch (row.event) {
    case "connection_created":
      return "connection.created";
    case "connection_replaced":
      return "connection.replaced";
    case "connection_refreshed":
      return "connection.refreshed";
    case "connection_needs_login":
      return "connection.needs_login";
    case "connection_expired":
      return "connection.expired";
    case "connection_revoked":
      return "connection.revoked";
    case "approval_requested":
      return "approval.requested";
    case "approval_decided":
      // "consumed" is the allowed call using its once-approval: that call's own events say it ran.
      if (row.decision === "consumed") return undefined;
      return row.decision === "expired" ? "approval.expired" : "approval.answered";
    case "login_started":
      return "login.started";
    case "login_completed":
      return "login.completed";
    case "login_refused":
      return "login.failed";
    case "tool_pin":
      return row.decision ? PIN_EVENTS[row.decision] : undefined;
    default:
      // Calls have their own events (call.*); grants, results, keys and admin rows have none.
      return undefined;
  }
}

/** An operator's name (`cli:alice`) stays out of events: only that the CLI acted. */
function actorOf(actor: string | null | undefined): string | null {
  if (!actor) return null;
  return actor.startsWith("cli:") ? "cli" : actor.slice(0, 64);
}

/**
 * The event a committed audit row stands for; undefined for rows that are no lifecycle event and
 * for rows without a team (an event that cannot be scoped to a team is never streamed).
 */
export function eventFromAudit(row: AuditEvent): AuditLifecycleEvent | undefined {
  const type = typeOf(row);
  if (!type || !row.teamId) return undefined;
  return {
    type,
    at: row.at,
    teamId: row.teamId,
    audit: row.event,
    channelId: row.channelId ?? null,
    threadTs: row.threadTs ?? null,
    callerUserId: row.callerUserId ?? null,
    ownerUserId: row.ownerUserId ?? null,
    approverUserId: row.approverUserId ?? null,
    connectionId: row.connectionId ?? null,
    service: row.service ?? null,
    tool: row.tool ?? null,
    decision: row.decision ?? null,
    actor: actorOf(row.actor),
    // argsHash is the hash of a call's arguments on every other row: only a pin's definition hash is carried.
    definitionHash: row.event === "tool_pin" ? (row.argsHash ?? null) : null,
  };
}
