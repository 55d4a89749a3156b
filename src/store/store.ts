import type { AuditEvent, AuditQuery, AuditRecord, CallSampleQuery, CallSamples } from "../audit/event.js";
import type { RowProof } from "../domain/row-proof.js";
import type { ThreadRef } from "../domain/thread.js";
import type { SealedSecret } from "../vault/aead.js";
import type { SealedRows } from "../vault/rotate.js";
import type { InstallationRepo, OAuthStateRepo } from "./installation-records.js";
import type {
  Approval,
  Connection,
  ConnectionScope,
  ConnectionStatus,
  Grant,
  LoginSession,
  NewConnection,
  ToolMetadata,
  ToolPin,
} from "./records.js";
import type { ResultRepo } from "./result-repo.js";
import type { WorkspaceRepo } from "./workspace-repo.js";

// The storage port. The core only sees these interfaces; two adapters implement the same contract:
// SQLite (src/store/sqlite, one process) and PostgreSQL (src/store/postgres, replicas). Every
// method that changes state takes the audit events describing the change and writes them in the
// same transaction.

/** Filters for listing connections; all optional, combined with AND. */
export interface ConnectionFilter {
  readonly teamId?: string;
  readonly ownerUserId?: string;
  readonly service?: string;
  readonly scope?: ConnectionScope;
  readonly statuses?: readonly ConnectionStatus[];
  /** Thread-scoped connections of this thread. */
  readonly thread?: ThreadRef;
}

/** A connection without its sealed secret: all that deciding who may use it needs. */
export type ConnectionMeta = Omit<Connection, "sealed">;

/**
 * The rows one caller can use in one thread, fetched by indexed lookups only (never a scan of the
 * team, never a ciphertext): the caller's own, other owners' thread-scoped rows of this thread,
 * the user-scoped rows of the thread's participants, and the shared rows. Paged by id.
 */
export interface CandidateQuery {
  readonly thread: ThreadRef;
  readonly caller: string;
  /** Users who took part in the thread: only their user-scoped rows can be borrowed here. */
  readonly participants: readonly string[];
  /** One service (mcp_call), or every service (connections_list). */
  readonly service?: string;
  /** `here`: the caller's active rows usable in this thread; `everywhere`: every live row of theirs (needs_login included). */
  readonly own: "here" | "everywhere";
  /** Rows of others and shared rows expired at or before `now` are left out. */
  readonly now: number;
  /** Only ids after this one (the previous page's last id). */
  readonly after?: string;
  readonly limit: number;
}

/** The caller's own usable connection to one service, as one mcp_call looks it up. */
export interface OwnConnectionQuery {
  readonly thread: ThreadRef;
  readonly caller: string;
  readonly service: string;
  /** Rows expired at or before `now` are not usable. */
  readonly now: number;
}

/** A candidate row and the caller's standing on it. */
export interface CandidateRow {
  readonly connection: ConnectionMeta;
  /** The caller holds a live grant on it in the query's thread. */
  readonly granted: boolean;
  /** For the caller's own rows: how many live grants they gave on it. */
  readonly grantsGiven: number;
}

/** How a connection ended. */
export interface EndConnection {
  readonly status: "revoked" | "expired";
  readonly reason: string;
  readonly at: number;
  /** Audit rows for this change; the store adds one `grant_revoked` row per grant it revokes. */
  readonly audit: readonly AuditEvent[];
  readonly actor: string;
}

/** Connections repository. */
export interface ConnectionRepo {
  /**
   * Inserts a connection. A live row with the same dedupe key (owner, service, scope, thread) is
   * ended as `revoked`/"replaced" first (ciphertext wiped, grants revoked), in the same transaction.
   */
  create(
    c: NewConnection,
    audit: readonly AuditEvent[],
  ): Promise<{ connection: Connection; replaced: Connection | null }>;
  get(id: string): Promise<Connection | undefined>;
  list(filter: ConnectionFilter): Promise<Connection[]>;
  /** The rows `q.caller` can use in `q.thread`, ordered by id; one indexed statement, no ciphertext. */
  candidates(q: CandidateQuery): Promise<CandidateRow[]>;
  /**
   * The caller's active, unexpired own row for `q.service` usable in `q.thread` (the thread-scoped
   * one first, then the oldest user-scoped one), sealed secret included: the own-row rule of
   * src/store/sql/candidates.ts. Adapters may remember the answer (and `get`'s rows) until a
   * connection row changes, by this process or any other: a revoke must still win on the next call.
   */
  ownConnection(q: OwnConnectionQuery): Promise<Connection | undefined>;
  /**
   * `ownConnection`, with the proof of every row of that owner for that service as they stand in
   * the same read (PostgreSQL: a later call decided from it proves them unchanged, row-proof.ts).
   */
  ownConnectionProved?(
    q: OwnConnectionQuery,
  ): Promise<{ readonly conn: Connection | undefined; readonly proof: RowProof }>;
  /** Ends a live connection: status set, ciphertext wiped, its grants revoked, pending approvals expired. Undefined if not live. */
  end(id: string, how: EndConnection): Promise<Connection | undefined>;
  /** Expires every live connection whose expires_at <= now, wiping each; returns those expired. */
  expireDue(now: number): Promise<Connection[]>;
  /** Marks a live connection as needing a new login (e.g. failed OAuth refresh) and wipes its ciphertext. */
  markNeedsLogin(id: string, at: number, audit: readonly AuditEvent[]): Promise<boolean>;
  /** Replaces the ciphertext of an active connection (e.g. refreshed OAuth tokens). */
  updateSecret(id: string, sealed: SealedSecret, at: number, audit: readonly AuditEvent[]): Promise<boolean>;
  /** Re-encrypts every row holding a ciphertext with `reseal`, all in one transaction; returns the count. */
  reencryptAll(reseal: (c: Connection & { sealed: SealedSecret }) => SealedSecret, audit: AuditEvent): Promise<number>;
}

/** Grants repository. */
export interface GrantRepo {
  /** Creates a live grant, or returns the existing live one for the same (connection, borrower, thread). */
  create(g: Omit<Grant, "revokedAt" | "revokedBy">, audit: readonly AuditEvent[]): Promise<Grant>;
  findLive(connectionId: string, borrowerUserId: string, thread: ThreadRef): Promise<Grant | undefined>;
  list(filter: {
    teamId?: string;
    ownerUserId?: string;
    borrowerUserId?: string;
    connectionId?: string;
    liveOnly?: boolean;
  }): Promise<Grant[]>;
  get(id: string): Promise<Grant | undefined>;
  /** Revokes a live grant; false if it was not live. */
  revoke(id: string, by: string, at: number, audit: readonly AuditEvent[]): Promise<boolean>;
}

/** Approvals repository. Decisions and consumption are conditional updates: each succeeds at most once. */
export interface ApprovalRepo {
  create(a: Approval, audit: readonly AuditEvent[]): Promise<void>;
  get(id: string): Promise<Approval | undefined>;
  getByNonce(nonce: string): Promise<Approval | undefined>;
  /**
   * Records the owner's decision if the approval is still pending, unexpired and `by` is its owner.
   * An `allowed_thread` decision creates `grant` in the same transaction. Returns whether it applied.
   */
  decide(
    id: string,
    d: {
      status: "allowed_thread" | "allowed_once" | "denied";
      by: string;
      at: number;
      grant?: Omit<Grant, "revokedAt" | "revokedBy">;
    },
    audit: readonly AuditEvent[],
  ): Promise<boolean>;
  /** Consumes an allowed approval for exactly `argsHash`; true once, false ever after. */
  consume(id: string, argsHash: string, at: number, audit: readonly AuditEvent[]): Promise<boolean>;
  /** Marks a pending approval expired (timeout); returns whether it was pending. */
  expire(id: string, at: number, audit: readonly AuditEvent[]): Promise<boolean>;
  /** Expires every pending approval with expires_at <= now (or all pending, at start-up). */
  expirePending(now: number, all?: boolean): Promise<Approval[]>;
  setCard(id: string, channel: string, ts: string): Promise<void>;
  /** Approvals newest first, at most `limit`: `pendingAt` keeps those still pending and unexpired at that time. */
  list(filter: { teamId?: string; ownerUserId?: string; pendingAt?: number; limit: number }): Promise<Approval[]>;
}

/** The append-only audit log. */
export interface AuditRepo {
  append(events: readonly AuditEvent[]): Promise<void>;
  query(q: AuditQuery): Promise<AuditRecord[]>;
  count(q?: AuditQuery): Promise<number>;
  /** The call outcome rows of a time range: one statement over the time index, at most `q.limit` rows. */
  callSamples(q: CallSampleQuery): Promise<CallSamples>;
}

/** Login flows: one-time links (stored as hashes) and their state. */
export interface LoginSessionRepo {
  create(
    s: Omit<LoginSession, "status" | "openedAt" | "endedAt" | "connectionId" | "viewerHash">,
    audit: readonly AuditEvent[],
  ): Promise<void>;
  get(id: string): Promise<LoginSession | undefined>;
  getByTokenHash(tokenHash: string): Promise<LoginSession | undefined>;
  /** Consumes a minted, unexpired link for one viewer (the flow then lives until `flowExpiresAt`); undefined if it was already opened, ended or expired. */
  open(
    tokenHash: string,
    viewerHash: string,
    at: number,
    flowExpiresAt: number,
    audit: readonly AuditEvent[],
  ): Promise<LoginSession | undefined>;
  /** Ends an opened or minted flow; false if it had already ended. */
  end(
    id: string,
    status: "completed" | "cancelled" | "expired" | "failed",
    at: number,
    connectionId: string | null,
    audit: readonly AuditEvent[],
  ): Promise<boolean>;
  /** Expires flows past their deadline; returns them. */
  expireDue(now: number): Promise<LoginSession[]>;
}

/** The tool metadata cache for mcp_describe, per team: one team's vendor metadata never reaches another. */
export interface ToolMetadataRepo {
  get(teamId: string, service: string): Promise<ToolMetadata | undefined>;
  put(m: ToolMetadata): Promise<void>;
}

/** What one pin transaction writes: the rows to upsert, their audit rows, and a value for the caller. */
export interface PinWrite<T> {
  readonly writes: readonly ToolPin[];
  readonly audit: readonly AuditEvent[];
  readonly value: T;
}

/** Tool definition pins per team and service (src/pinning): what a vendor may serve without an admin's say. */
export interface ToolPinRepo {
  get(teamId: string, service: string, tool: string): Promise<ToolPin | undefined>;
  /** `get`, with the pin's proof from the same read (PostgreSQL; see ConnectionRepo.ownConnectionProved). */
  getProved?(
    teamId: string,
    service: string,
    tool: string,
  ): Promise<{ readonly pin: ToolPin | undefined; readonly proof: RowProof }>;
  /** The service's pins in the team, by tool name (as many as its vendor lists, within the tool-list limits). */
  list(teamId: string, service: string): Promise<ToolPin[]>;
  /** Pins waiting for an admin (quarantined, new) or rejected, most recently changed first, at most `limit`. */
  undecided(filter: { teamId?: string; service?: string; tool?: string; limit: number }): Promise<ToolPin[]>;
  /**
   * Reads the service's pins and writes what `change` (pure, synchronous) returns, with its audit rows,
   * in one transaction: two vendors starting at once cannot lose each other's observation.
   */
  update<T>(teamId: string, service: string, change: (current: readonly ToolPin[]) => PinWrite<T>): Promise<T>;
}

/**
 * How many statements and write transactions a store has run (slaude_db_statements_total, the bench).
 * SQLite: executions of prepared statements (BEGIN/COMMIT not included) and writeTx commits;
 * PostgreSQL: statements sent and transactions committed.
 */
export interface DbCounts {
  statements: number;
  transactions: number;
}

/** The whole store; as SealedRows, `reencryptAll` re-seals connections and installations in one transaction (keys rotate). */
export interface Store extends SealedRows {
  readonly connections: ConnectionRepo;
  readonly grants: GrantRepo;
  readonly approvals: ApprovalRepo;
  readonly audit: AuditRepo;
  readonly toolMetadata: ToolMetadataRepo;
  readonly toolPins: ToolPinRepo;
  readonly loginSessions: LoginSessionRepo;
  /** The local workspace's state (empty when Slack serves). */
  readonly workspace: WorkspaceRepo;
  /** Full results of truncated calls, sealed, for resources/read (src/results). */
  readonly results: ResultRepo;
  /** The tenants: one row per Slack installation (team or org-wide), tokens sealed (src/installations). */
  readonly installations: InstallationRepo;
  /** Single-use Slack OAuth install states, shared by every replica. */
  readonly oauthStates: OAuthStateRepo;
  /** Whether the database answers a query now: the database condition of /readyz (never /healthz, the liveness probe). */
  ping(): Promise<boolean>;
  /** The statement and transaction counters for /metrics. */
  counts(): Readonly<DbCounts>;
  close(): Promise<void>;
}
