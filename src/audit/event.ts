/** Every kind of thing the audit log records (brief §9). */
export type AuditEventKind =
  | "call_started"
  | "call"
  | "call_denied"
  | "approval_requested"
  | "approval_decided"
  | "approval_rejected_click"
  | "grant_created"
  | "grant_revoked"
  | "connection_created"
  | "connection_replaced"
  | "connection_revoked"
  | "connection_expired"
  | "connection_needs_login"
  | "connection_refreshed"
  | "login_started"
  | "login_completed"
  | "login_refused"
  | "keys_rotated"
  | "result_stored"
  | "result_evicted"
  | "result_read"
  | "admin_action"
  /** A tool definition seen, changed, accepted or rejected (src/pinning); `argsHash` holds the definition hash. */
  | "tool_pin"
  /** Slack installations (tenants): `teamId` is the team, or the enterprise of an org-wide install; never a token. */
  | "installation_installed"
  | "installation_updated"
  | "installation_disabled"
  | "installation_enabled"
  | "installation_uninstalled"
  | "installation_token_refreshed"
  | "installation_refused";

/** An audit row as written: identifiers, decisions and sizes only, never values or secrets. */
export interface AuditEvent {
  readonly at: number;
  readonly event: AuditEventKind;
  readonly teamId?: string | null;
  readonly channelId?: string | null;
  readonly threadTs?: string | null;
  readonly callerUserId?: string | null;
  readonly ownerUserId?: string | null;
  readonly connectionId?: string | null;
  readonly service?: string | null;
  readonly tool?: string | null;
  readonly argsHash?: string | null;
  readonly decision?: string | null;
  readonly approverUserId?: string | null;
  readonly durationMs?: number | null;
  readonly resultBytes?: number | null;
  readonly errorCode?: string | null;
  readonly actor?: string | null;
  /** Pairs a call's `call_started` row (written before the vendor runs) with its `call` completion row. */
  readonly callId?: string | null;
}

/** An audit row read back, with its sequence number. */
export interface AuditRecord extends AuditEvent {
  readonly seq: number;
}

/** Filters for querying the audit log; all optional, combined with AND. */
export interface AuditQuery {
  readonly since?: number;
  readonly until?: number;
  readonly teamId?: string;
  readonly userId?: string;
  readonly connectionId?: string;
  readonly service?: string;
  readonly event?: AuditEventKind;
  /** The rows of one call (its `call_started` and `call` rows). */
  readonly callId?: string;
  /** Only rows with a sequence number above this one (the event stream's tail). */
  readonly afterSeq?: number;
  /** Only rows with one of these sequence numbers (the tail's re-check of gaps); at most 1,000. */
  readonly seqs?: readonly number[];
  readonly limit?: number;
  /** "latest": the newest `limit` rows (still returned oldest first). Default "earliest". */
  readonly take?: "earliest" | "latest";
}

/** The calls in a time range, as the Activity view and `slaude-connect stats` read them (src/activity). */
export interface CallSampleQuery {
  /** Rows with `since <= at < until`. */
  readonly since: number;
  readonly until: number;
  readonly teamId?: string;
  /** At most this many rows, the newest kept. */
  readonly limit: number;
}

/** One call's outcome row: a completion (`call`) or a refusal (`call_denied`), never its `call_started` row. */
export interface CallSample {
  readonly at: number;
  readonly event: "call" | "call_denied";
  /** The route it ran by (`own`, `grant`, `shared`, `approval_once`, `approval_thread`) or the refusal code. */
  readonly decision: string | null;
  readonly errorCode: string | null;
  readonly durationMs: number | null;
}

/** The rows of a range, newest first; `truncated` when the range held more than the limit. */
export interface CallSamples {
  readonly samples: readonly CallSample[];
  readonly truncated: boolean;
}
