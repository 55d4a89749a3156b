import type http from "node:http";
import { isInitializeRequest } from "@modelcontextprotocol/server";
import type { Broker } from "../broker/broker.js";
import { attachTurnAhead, type TurnAhead } from "../broker/tool-request.js";
import { type Clock, systemClock } from "../clock/clock.js";
import { PeriodicJob } from "../jobs/periodic-job.js";
import type { LimitRefusals } from "../limits/limit-kind.js";
import type { Logger } from "../log/logger.js";
import { singleInstallation } from "../tenancy/tenant-directory.js";
import type { OriginGuard } from "./host-auth.js";
import { guardHostRequest } from "./host-guard.js";
import type { HostCaller, HostTeamAuth } from "./host-teams.js";
import { type RequestScope, type RouteHandler, sendJson } from "./http-server.js";
import { isLegacyMessage, ModernLeg } from "./mcp-modern.js";
import {
  BAD_INITIALIZE,
  cancelledIds,
  deliverCancellation,
  NEEDS_THREAD,
  notFound,
  readMcpBody,
  sendRpcError,
  TOKEN_MISMATCH,
  tooMany,
  turnHeaderWellFormed,
} from "./mcp-refusals.js";
import { McpSessionHost } from "./mcp-session-host.js";
import {
  DEFAULT_MAX_LIVE_SESSIONS,
  DEFAULT_SESSION_LIMITS,
  type McpSession,
  type SessionLimits,
  sweepEveryMs,
} from "./mcp-sessions.js";
import {
  InitializeParamsSchema,
  MAX_INITIALIZE_JSON,
  MemorySessionRecords,
  type SessionRecord,
  type SessionRecords,
} from "./session-records.js";
import { refusalOf, sendMcpRefusal, TenantGuard } from "./tenant-guard.js";
import { parseThreadHeader } from "./thread-header.js";
import { turnAhead } from "./turn-ahead.js";
import { heldAnswer, WarmCalls } from "./warm-calls.js";
import { sendWebResponse } from "./web-answer.js";
import { toWebRequest } from "./web-bridge.js";

// Re-exported where the host endpoints have always imported them from.
export { idPart, parseThreadHeader } from "./thread-header.js";

/** What the MCP endpoint is built from; the optional parts default to one process and one installation. */
export interface McpEndpointDeps {
  readonly broker: Broker;
  readonly auth: HostTeamAuth;
  readonly origin: OriginGuard;
  readonly log: Logger;
  readonly limits?: SessionLimits;
  readonly clock?: Clock;
  /** Session records: shared on PostgreSQL (any replica serves any session), this process's otherwise. */
  readonly records?: SessionRecords;
  /** Whether a host token may act in a thread's tenant: at initialize and on every request of a session. */
  readonly tenants?: TenantGuard;
}

/**
 * The MCP endpoint: Streamable HTTP with stateful sessions, each bound to one thread and to the host
 * token that opened it. With shared session records (PostgreSQL) any replica serves any live
 * session (McpSessionHost).
 */
export class McpEndpoint {
  private readonly host: McpSessionHost;
  private readonly broker: Broker;
  private readonly sweeper: PeriodicJob;
  private readonly auth: HostTeamAuth;
  private readonly origin: OriginGuard;
  private readonly log: Logger;
  private readonly limits: SessionLimits;
  private readonly tenants: TenantGuard;
  /** Counts refusals by the per-team session cap (the limit refusals metric). */
  private readonly refused: LimitRefusals;
  /** The stateless 2026-07-28 era: requests that carry their own protocol envelope. */
  private readonly modern: ModernLeg;
  /** With shared records: warm mcp_calls from the rows each local session's last one was decided from (warm-calls.ts). */
  private readonly warm: WarmCalls;

  constructor(d: McpEndpointDeps) {
    const { broker, log } = d;
    const limits = d.limits ?? DEFAULT_SESSION_LIMITS;
    const clock = d.clock ?? systemClock;
    const records = d.records ?? new MemorySessionRecords(limits.maxSessions);
    this.auth = d.auth;
    this.origin = d.origin;
    this.log = log;
    this.limits = limits;
    this.tenants = d.tenants ?? new TenantGuard(singleInstallation(), log);
    this.host = new McpSessionHost(broker, records, limits, clock, log);
    this.broker = broker;
    this.warm = new WarmCalls(this.host, broker, clock, limits.maxSessions);
    // A modern request in progress holds what a busy session holds: at most as many as sessions.
    this.modern = new ModernLeg(broker, this.tenants, log, limits.maxSessions);
    this.refused = (l) => broker.deps.metrics.limitRefused(l);
    this.sharedRecords = records.shared;
    // Idle sessions are closed within a quarter of the idle time (at most a minute) after expiring.
    this.sweeper = new PeriodicJob({
      name: "mcp session sweep",
      intervalMs: sweepEveryMs(limits),
      run: async () => {
        this.sweepIdle();
        await this.host.sweepRecords();
      },
      log,
      clock,
    });
    this.sweeper.start();
  }

  /**
   * Where a client's `notifications/cancelled` is announced when other replicas serve the same
   * sessions: the request it names may be running on another one (set by src/app; unset alone).
   */
  onCancelled: ((sessionId: string, requestId: string | number) => void) | undefined;
  private readonly sharedRecords: boolean;

  /**
   * Delivers a cancellation announced by another replica to the session's transport here, if this
   * replica holds it (mcp-refusals.ts).
   */
  cancelFromElsewhere(sessionId: string, requestId: string | number): Promise<boolean> {
    return deliverCancellation(this.host.table.get(sessionId), sessionId, requestId);
  }

  /** Sessions whose transport this process holds. */
  get sessionCount(): number {
    return this.host.table.size;
  }

  /** Teams holding their whole per-team share of this process's sessions (the tenants-at-limit gauge). */
  get teamsAtSessionCap(): number {
    return this.host.table.teamsAtCap();
  }

  /** Open sessions with a request still being answered (they are never evicted or expired). */
  get busySessionCount(): number {
    return this.host.table.busyCount;
  }

  /** Closes local sessions idle for SLAUDE_MCP_SESSION_IDLE_SECONDS; runs periodically, callable by tests. */
  sweepIdle(): number {
    return this.host.table.sweepIdle();
  }

  /** Ends shared session records idle past the idle time (every replica runs it; idempotent); callable by tests. */
  sweepRecords(): Promise<number> {
    return this.host.sweepRecords();
  }

  /**
   * Hands one request of session `s` to its transport once the tenant allows it. With `ahead`
   * made from remembered rows, an attempt they did not prove is not answered: false, and the
   * caller handles the request again (`tracked`: this response is already counted busy).
   */
  private async serveSession(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    scope: RequestScope,
    caller: HostCaller,
    body: unknown,
    sessionId: string,
    s: McpSession,
    record: SessionRecord | undefined,
    ahead: TurnAhead | undefined,
    tracked = false,
  ): Promise<boolean> {
    // Every request, not only initialize: a binding changed since (a restart) confines the session too.
    const verdict = await this.tenants.check(caller.binding, s.thread.teamId);
    if (!verdict.ok) {
      const r = refusalOf(verdict.reason, s.thread.teamId);
      sendMcpRefusal(res, r.status, r.code, r.message);
      return true;
    }
    await this.host.noteUse(record);
    if (this.sharedRecords && this.onCancelled)
      for (const requestId of cancelledIds(body)) this.onCancelled(sessionId, requestId);
    if (!tracked) this.host.table.track(sessionId, s, res, req.method !== "GET");
    const web = attachTurnAhead(toWebRequest(req, { requestId: scope.requestId }), ahead);
    const answer = await s.transport.handleRequest(web, { parsedBody: body });
    const held = await heldAnswer(ahead, answer, res);
    if (held === "send") await sendWebResponse(res, answer);
    return held !== "unproved";
  }

  readonly handler: RouteHandler = async (req, res, _url, scope) => {
    const caller = guardHostRequest(req, res, this.auth, this.origin);
    if (!caller || !turnHeaderWellFormed(req, res)) return;
    const sessionId = req.headers["mcp-session-id"];
    const headerThread = req.headers["x-slaude-thread"];
    let body: unknown;
    if (req.method === "POST") {
      const read = await readMcpBody(req, res);
      if (!read) return;
      body = read.body;
    }
    // A request carrying the 2026-07-28 envelope is answered without a session, whatever else it sends.
    if (!isLegacyMessage(req, body)) return this.modern.serve(req, res, caller, body, scope);
    if (typeof sessionId === "string") {
      // A warm mcp_call from remembered rows first; handled again below if they did not hold.
      const warm = this.sharedRecords ? this.warm.attempt(req, body, caller, sessionId, headerThread) : undefined;
      if (warm) {
        if (await this.serveSession(req, res, scope, caller, body, sessionId, warm.session, undefined, warm.ahead))
          return;
        this.warm.drop(sessionId);
      }
      const ahead = this.sharedRecords
        ? turnAhead(this.broker, req, body, caller, this.host.table.get(sessionId))
        : undefined;
      const found = await this.host.lookup(sessionId, headerThread, caller);
      switch (found.kind) {
        case "not_found":
          return sendJson(res, 404, notFound);
        case "token_mismatch":
          scope.log.warn("mcp request refused: the session was opened with another host token");
          return sendMcpRefusal(res, 403, "session_token_mismatch", TOKEN_MISMATCH);
        case "thread_mismatch":
          return sendRpcError(res, 403, -32003, "This session is bound to another thread");
        case "full":
          scope.log.warn("mcp session not rebuilt: the session cap is reached and every session is busy", {
            maxSessions: this.limits.maxSessions,
          });
          return sendJson(res, 503, tooMany(this.limits.maxSessions), { "retry-after": "5" });
        case "ok":
          break;
      }
      // Decided from the proved reads and started on the caller's own row: the next call may start from
      // them (remembered as it starts, so the next request finds them whenever it comes).
      const attempt = ahead?.facts?.attempt;
      const sessionProof = found.proof;
      if (ahead && attempt && sessionProof)
        attempt.onRan = () => void this.warm.remember(sessionId, found.record, sessionProof, ahead);
      await this.serveSession(req, res, scope, caller, body, sessionId, found.session, found.record, ahead, !!warm);
      return;
    }
    if (req.method !== "POST" || !isInitializeRequest(body)) {
      return sendRpcError(res, 400, -32000, "No session: send initialize first");
    }
    const thread = parseThreadHeader(headerThread);
    if (!thread || typeof headerThread !== "string") return sendRpcError(res, 400, -32602, NEEDS_THREAD);
    const verdict = await this.tenants.check(caller.binding, thread.teamId);
    if (!verdict.ok) {
      const r = refusalOf(verdict.reason, thread.teamId);
      return sendMcpRefusal(res, r.status, r.code, r.message);
    }
    const init = InitializeParamsSchema.safeParse(body.params);
    if (!init.success || JSON.stringify(init.data).length > MAX_INITIALIZE_JSON) {
      return sendRpcError(res, 400, -32602, BAD_INITIALIZE);
    }
    // One team's sessions cannot take every session of the process (or, with shared records, of the deployment).
    if (!this.host.table.roomForTeam(thread.teamId)) return this.teamFull(res);
    if (!this.host.table.reserve(thread.teamId)) {
      // Every open session is in use: refuse clearly rather than close one mid-request.
      scope.log.warn("mcp session refused: the session cap is reached and every session is busy", {
        maxSessions: this.limits.maxSessions,
      });
      return sendJson(res, 503, tooMany(this.limits.maxSessions), { "retry-after": "5" });
    }
    try {
      const s = await this.host.open(thread, headerThread, init.data, caller.sessionDigest());
      if (s === "full")
        return sendJson(res, 503, tooMany(this.limits.maxLiveSessions ?? DEFAULT_MAX_LIVE_SESSIONS), {
          "retry-after": "5",
        });
      if (s === "team_full") return this.teamFull(res);
      const answer = await s.transport.handleRequest(toWebRequest(req, { requestId: scope.requestId }), {
        parsedBody: body,
      });
      // Refused before it initialized (e.g. a wrong Accept): no client has the id; its record ends now.
      if (s.transport.sessionId === undefined) await this.host.abandon(s);
      await sendWebResponse(res, answer);
    } finally {
      this.host.table.release(thread.teamId);
    }
  };

  /** 429: the team holds its whole share of MCP sessions, every one busy (SLAUDE_MCP_MAX_SESSIONS_PER_TEAM). */
  private teamFull(res: http.ServerResponse): void {
    this.refused?.("mcp_sessions");
    const message = `Too many open MCP sessions for this team (the limit is ${this.limits.maxSessionsPerTeam} per team and all are busy); close one or retry later`;
    sendJson(res, 429, { jsonrpc: "2.0", error: { code: -32000, message }, id: null }, { "retry-after": "5" });
  }

  async close(): Promise<void> {
    await this.sweeper.stop();
    await this.modern.close();
    await this.host.table.closeAll();
  }
}
