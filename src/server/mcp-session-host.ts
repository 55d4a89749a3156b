import { randomUUID } from "node:crypto";
import {
  LATEST_PROTOCOL_VERSION,
  SUPPORTED_PROTOCOL_VERSIONS,
  WebStandardStreamableHTTPServerTransport,
} from "@modelcontextprotocol/server";
import type { Broker } from "../broker/broker.js";
import type { Clock } from "../clock/clock.js";
import type { RowProof } from "../domain/row-proof.js";
import type { ThreadRef } from "../domain/thread.js";
import type { Logger } from "../log/logger.js";
import type { HostCaller } from "./host-teams.js";
import {
  DEFAULT_MAX_LIVE_SESSIONS,
  type McpSession,
  type SessionLimits,
  SessionTable,
  sweepEveryMs,
  touchEveryMs,
} from "./mcp-sessions.js";
import { type InitializeParams, isLive, type SessionRecord, type SessionRecords } from "./session-records.js";
import { parseThreadHeader } from "./thread-header.js";

// The sessions of one process: the local table of live transports (a bounded cache) over the
// session records. With shared records (PostgreSQL), a session this process does not hold is looked
// up and, when live, rebuilt here by replaying its initialize through the SDK's public API.

/** What resolving a request's session id came to. */
export type SessionLookup =
  | {
      readonly kind: "ok";
      readonly session: McpSession;
      readonly record: SessionRecord | undefined;
      /** The record's proof from the same read, where the records give one (row-proof.ts). */
      readonly proof?: RowProof;
    }
  | { readonly kind: "not_found" }
  /** Another host token than the one that opened the session (even a valid one): refused, the session untouched. */
  | { readonly kind: "token_mismatch" }
  | { readonly kind: "thread_mismatch" }
  | { readonly kind: "full" };

/** The request id of the replayed initialize: never sent to a client (its answer is read here). */
const REPLAY_ID = "slaude-connect-rebuild";
/** The SSE/JSON answer headers the transport requires of any POST, ours included. */
const INTERNAL_POST = { accept: "application/json, text/event-stream", "content-type": "application/json" };

/** Owns the local session table and the session records; see SessionLookup for what `lookup` decides. */
export class McpSessionHost {
  readonly table: SessionTable;
  /**
   * Rebuilds in flight, one per session id. A rebuild does no I/O today (it completes within one
   * turn of the event loop), so this is a guard for when it does: two requests never build two transports.
   */
  private readonly rebuilding = new Map<string, Promise<McpSession | "full">>();

  constructor(
    private readonly broker: Broker,
    readonly records: SessionRecords,
    private readonly limits: SessionLimits,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {
    this.table = new SessionTable(limits, clock, log);
  }

  /**
   * Records and connects a new session for `thread`, whose initialize the caller then hands to the
   * returned transport. The session joins the table when the transport accepts the initialize.
   */
  async open(
    thread: ThreadRef,
    threadHeader: string,
    init: InitializeParams,
    tokenDigest: string,
  ): Promise<McpSession | "full" | "team_full"> {
    const id = randomUUID();
    const protocolVersion = SUPPORTED_PROTOCOL_VERSIONS.includes(init.protocolVersion)
      ? init.protocolVersion
      : LATEST_PROTOCOL_VERSION;
    const now = this.clock.now();
    // A session is idle (may be ended for a new one) once no replica can have used it since its last
    // recorded use: uses are written a touch interval apart, and busy sessions at every sweep.
    const room = {
      max: this.limits.maxLiveSessions ?? DEFAULT_MAX_LIVE_SESSIONS,
      idleBefore: now - touchEveryMs(this.limits) - sweepEveryMs(this.limits),
      ...(this.limits.maxSessionsPerTeam !== undefined ? { maxPerTeam: this.limits.maxSessionsPerTeam } : {}),
    };
    // Recorded before the client learns the id: any replica can serve its very next request.
    const recorded = await this.records.open(
      { id, teamId: thread.teamId, tokenDigest, threadHeader, protocolVersion, initialize: init, createdAt: now },
      room,
    );
    if (!recorded.opened && recorded.teamFull) return "team_full";
    if (!recorded.opened) {
      this.log.warn("mcp session refused: the deployment's live session cap is reached and no session is idle", {
        maxLiveSessions: room.max,
      });
      return "full";
    }
    if (recorded.ended)
      this.log.info("mcp sessions ended to make room: the deployment's live session cap is reached", {
        count: recorded.ended,
        maxLiveSessions: room.max,
      });
    return this.connect(id, thread, threadHeader, tokenDigest, true);
  }

  /** Drops a session whose initialize the transport refused (it never joined the table). */
  async abandon(s: McpSession): Promise<void> {
    await s.server.close().catch(() => {});
    await this.records.end(s.id, this.clock.now());
  }

  /**
   * The session a request names, for `caller` (the host token of this request). Shared records are
   * read on every request (one primary-key read): an ended session is refused on every replica at
   * once, and a live one held elsewhere is rebuilt. The token is checked first and nothing changes on
   * a mismatch: another host's request neither uses, rebuilds nor ends the session.
   */
  async lookup(id: string, headerThread: string | string[] | undefined, caller: HostCaller): Promise<SessionLookup> {
    if (!this.records.shared) {
      const s = this.table.get(id);
      if (!s || s.closed) return { kind: "not_found" };
      const owner = caller.owns(s.tokenDigest);
      if (owner !== "match") return owner === "mismatch" ? { kind: "token_mismatch" } : { kind: "not_found" };
      return headerThread !== undefined && headerThread !== s.threadHeader
        ? { kind: "thread_mismatch" }
        : { kind: "ok", session: s, record: undefined };
    }
    const proved = this.records.getProved ? await this.records.getProved(id) : undefined;
    const record = proved ? proved.record : await this.records.get(id);
    const local = this.table.get(id);
    if (!isLive(record)) {
      // Ended on another replica (or purged): this replica's transport goes too.
      if (local) void local.server.close().catch(() => {});
      return { kind: "not_found" };
    }
    // A record without a verifiable digest (written before it existed, or under a key no longer
    // configured) is served to nobody: to the client it is gone, and it re-initializes.
    const owner = caller.owns(record.tokenDigest);
    if (owner !== "match") return owner === "mismatch" ? { kind: "token_mismatch" } : { kind: "not_found" };
    // Compared with the value the session was opened with, never re-parsed: only the same bytes name the same thread.
    if (headerThread !== undefined && headerThread !== record.threadHeader) return { kind: "thread_mismatch" };
    const proof = proved ? { proof: proved.proof } : {};
    if (local && !local.closed) return { kind: "ok", session: local, record, ...proof };
    const s = await this.rebuildOnce(record);
    return s === "full" ? { kind: "full" } : { kind: "ok", session: s, record, ...proof };
  }

  /**
   * The checks `lookup` makes of a record, made of one remembered with its proof (the warm memo):
   * the session held here and open, opened by this very token, for this very thread header, and no
   * last-use write due (that write would change the row). Undefined: look the record up instead.
   */
  remembered(
    id: string,
    record: SessionRecord,
    headerThread: string | string[] | undefined,
    caller: HostCaller,
  ): McpSession | undefined {
    const local = this.table.get(id);
    if (!local || local.closed || !isLive(record)) return undefined;
    if (caller.owns(record.tokenDigest) !== "match") return undefined;
    if (headerThread !== record.threadHeader) return undefined;
    if (this.clock.now() - record.lastSeenAt >= touchEveryMs(this.limits)) return undefined;
    return local;
  }

  /** Moves the record's last use forward, at most every tenth of the idle time (idle expiry stays within that). */
  async noteUse(record: SessionRecord | undefined): Promise<void> {
    if (!record) return;
    const now = this.clock.now();
    if (now - record.lastSeenAt < touchEveryMs(this.limits)) return;
    // Awaited, so the idle sweep of any replica sees this use; a failed write only risks an early expiry, not the request.
    await this.records
      .touch(record.id, now)
      .catch((err: unknown) => this.log.warn("mcp session last-use write failed", { err: String(err) }));
  }

  /**
   * The shared-records half of the idle sweep: sessions busy here are marked used (a long call keeps
   * its session), sessions unused for the idle time (plus the touch granularity) end everywhere, and
   * local transports of ended sessions close. Idempotent: every replica runs it.
   */
  async sweepRecords(): Promise<number> {
    if (!this.records.shared) return 0;
    const now = this.clock.now();
    for (const id of this.table.busyIds()) await this.records.touch(id, now);
    const ended = await this.records.expireIdle({
      idleBefore: now - this.limits.idleMs - touchEveryMs(this.limits),
      now,
      purgeBefore: now - this.limits.idleMs,
    });
    if (ended) this.log.info("idle mcp sessions ended", { count: ended, idleMs: this.limits.idleMs });
    // Sessions ended on another replica (a DELETE there, or this sweep) lose their transports and GET streams here too.
    for (const id of await this.records.notLive(this.table.ids()))
      this.table
        .get(id)
        ?.server.close()
        .catch(() => {});
    return ended;
  }

  private rebuildOnce(record: SessionRecord): Promise<McpSession | "full"> {
    const pending = this.rebuilding.get(record.id);
    if (pending) return pending;
    const p = this.rebuild(record).finally(() => this.rebuilding.delete(record.id));
    this.rebuilding.set(record.id, p);
    return p;
  }

  /** A session opened elsewhere (or evicted here), restored to the initialized state by replaying its initialize. */
  private async rebuild(record: SessionRecord): Promise<McpSession | "full"> {
    if (!this.table.reserve()) return "full";
    try {
      // A stored header that does not parse is a bug or tampering: fail closed.
      const thread = parseThreadHeader(record.threadHeader);
      if (!thread) throw new Error("an mcp session record holds an unparsable thread");
      // The owner was checked against this digest before the rebuild (lookup): it is defined here.
      const s = await this.connect(record.id, thread, record.threadHeader, record.tokenDigest ?? "", false);
      try {
        const init = await s.transport.handleRequest(
          new Request(INTERNAL_URL, { method: "POST", headers: INTERNAL_POST }),
          {
            parsedBody: { jsonrpc: "2.0", id: REPLAY_ID, method: "initialize", params: record.initialize },
          },
        );
        const answer = await init.text();
        if (init.status !== 200 || !answer.includes('"result"'))
          throw new Error(`replayed initialize answered ${init.status}`);
        const done = await s.transport.handleRequest(
          new Request(INTERNAL_URL, { method: "POST", headers: { ...INTERNAL_POST, "mcp-session-id": record.id } }),
          {
            parsedBody: { jsonrpc: "2.0", method: "notifications/initialized" },
          },
        );
        if (done.status !== 202) throw new Error(`replayed initialized notification answered ${done.status}`);
      } catch (err) {
        await s.server.close().catch(() => {});
        throw err;
      }
      this.table.add(record.id, s);
      this.log.info("mcp session rebuilt from its record", { teamId: record.teamId });
      return s;
    } finally {
      this.table.release();
    }
  }

  /** A transport whose session id is `id` and the broker's server for `thread`, connected. */
  private async connect(
    id: string,
    thread: ThreadRef,
    threadHeader: string,
    tokenDigest: string,
    joinOnInitialize: boolean,
  ): Promise<McpSession> {
    const server = this.broker.serverForThread(thread);
    let session: McpSession | undefined;
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => id,
      onsessioninitialized: () => {
        if (joinOnInitialize && session) this.table.add(id, session);
      },
      // A client DELETE ends the session everywhere (answered only once the record says so).
      onsessionclosed: () => this.records.end(id, this.clock.now()),
    });
    session = { id, transport, server, thread, threadHeader, tokenDigest, busy: 0, closed: false };
    const s = session;
    transport.onclose = () => {
      this.table.remove(id, s);
      // Process-local records live exactly as long as the transport; shared ones outlive it (another replica may serve them).
      if (!this.records.shared) void this.records.end(id, this.clock.now());
    };
    await server.connect(transport);
    return s;
  }
}

const INTERNAL_URL = "http://slaude-connect.invalid/mcp";
