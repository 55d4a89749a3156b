import type http from "node:http";
import { isInitializeRequest } from "@modelcontextprotocol/server";
import type { Broker } from "../broker/broker.js";
import { attachTurnAhead, type TurnAhead } from "../broker/tool-request.js";
import { type Clock, systemClock } from "../clock/clock.js";
import type { RowProof } from "../domain/row-proof.js";
import { PeriodicJob } from "../jobs/periodic-job.js";
import type { LimitRefusals } from "../limits/limit-kind.js";
import type { Logger } from "../log/logger.js";
import { singleInstallation } from "../tenancy/tenant-directory.js";
import type { OriginGuard } from "./host-auth.js";
import type { HostCaller, HostTeamAuth } from "./host-teams.js";
import { type RequestScope, type RouteHandler, sendJson } from "./http-server.js";
import { isLegacyMessage, ModernLeg } from "./mcp-modern.js";
import { cancelledIds, notFound, readMcpBody, TOKEN_MISMATCH, tooMany, turnHeaderWellFormed } from "./mcp-refusals.js";
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
import { WarmMemo, warmRequestOf } from "./warm-memo.js";
import { sendWebResponse } from "./web-answer.js";
import { toWebRequest } from "./web-bridge.js";

// Re-exported where the host endpoints have always imported them from.
export { idPart, parseThreadHeader } from "./thread-header.js";

/**
 * Shared guard of every host-facing route: Host/Origin, then the bearer host token. Answers the
 * refusal itself and returns undefined; otherwise the caller, whose tenant each route then checks.
 */
export function guardHostRequest(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  auth: HostTeamAuth,
  origin: OriginGuard,
): HostCaller | undefined {
  const o = origin.check(req);
  if (o !== "ok") {
    sendJson(res, 403, { error: o });
    return undefined;
  }
  const who = auth.verify(req);
  if (who.kind === "unauthorized") {
    sendJson(res, 401, { error: "unauthorized" }, { "www-authenticate": 'Bearer realm="slaude-connect"' });
    return undefined;
  }
  return who.caller;
}

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
  /** With shared records: the rows each local session's last warm mcp_call was decided from (warm-memo.ts). */
  private readonly warm: WarmMemo;
  private readonly clock: Clock;

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
    this.clock = clock;
    this.warm = new WarmMemo(limits.maxSessions);
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
   * replica holds it: the SDK aborts the request when it runs here and ignores it otherwise.
   */
  async cancelFromElsewhere(sessionId: string, requestId: string | number): Promise<boolean> {
    const s = this.host.table.get(sessionId);
    if (!s || s.closed) return false;
    const note = {
      jsonrpc: "2.0",
      method: "notifications/cancelled",
      params: { requestId, reason: "cancelled by the client through another replica" },
    };
    const req = new Request("http://replica.invalid/mcp", {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-session-id": sessionId,
      },
      body: JSON.stringify(note),
    });
    const answer = await s.transport.handleRequest(req, { parsedBody: note });
    return answer.status === 202;
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
    // The answer streams out before the call knows whether its remembered rows held: wait for that.
    // Only a request the transport took (its stream open) runs the handler that settles it; a client
    // that leaves stops the wait.
    const attempt = ahead?.facts?.attempt;
    if (attempt?.decided && answer.status === 200 && answer.body) {
      const left = new Promise<"left">((resolve) => res.once("close", () => resolve("left")));
      const v = await Promise.race([attempt.decided, left]);
      if (v === "unproved" || v === "left") {
        await answer.body.cancel().catch(() => {});
        if (v === "unproved") return false;
        return true;
      }
    }
    await sendWebResponse(res, answer);
    return true;
  }

  /** The turn ahead of a warm mcp_call of a local session from its remembered rows, if they serve this request. */
  private warmAttempt(
    req: http.IncomingMessage,
    body: unknown,
    caller: HostCaller,
    sessionId: string,
    headerThread: string | string[] | undefined,
  ): { session: McpSession; ahead: TurnAhead } | undefined {
    if (!this.warm.has(sessionId)) return undefined;
    const header = req.headers["x-slaude-turn"];
    const r = warmRequestOf(body, typeof header === "string" ? header : undefined);
    if (!r || (header !== undefined && typeof header !== "string")) return undefined;
    const now = this.clock.now();
    const found = this.warm.attempt(sessionId, r, now, this.broker.deps.pins.writesStarted);
    if (!found) return undefined;
    const session = this.host.remembered(sessionId, found.entry.record, headerThread, caller);
    if (!session) {
      this.warm.drop(sessionId);
      return undefined;
    }
    return { session, ahead: found.ahead };
  }

  /** Keeps the rows a warm call was decided from (its reads ahead and the session's), once all are in. */
  private async remember(
    sessionId: string,
    record: SessionRecord | undefined,
    sessionProof: RowProof,
    ahead: TurnAhead,
  ): Promise<void> {
    const f = ahead.facts;
    if (!record || !f || !ahead.proved || !f.ownProof || !f.pin?.proof) return;
    try {
      const [turn, own, ownProof, pin, pinProof] = await Promise.all([
        ahead.proved,
        f.own,
        f.ownProof,
        f.pin.pin,
        f.pin.proof,
      ]);
      if (!own) return;
      this.warm.set(sessionId, {
        record,
        threadKey: f.threadKey,
        later: turn.later,
        caller: f.caller,
        service: f.service,
        tool: f.tool,
        own,
        pin,
        proofs: [sessionProof, turn.proof, ownProof, pinProof],
        at: this.clock.now(),
      });
    } catch {
      // A read that failed leaves nothing to remember: the next call reads afresh.
    }
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
      const warm = this.sharedRecords ? this.warmAttempt(req, body, caller, sessionId, headerThread) : undefined;
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
          return sendJson(res, 403, {
            jsonrpc: "2.0",
            error: { code: -32003, message: "This session is bound to another thread" },
            id: null,
          });
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
        attempt.onRan = () => void this.remember(sessionId, found.record, sessionProof, ahead);
      await this.serveSession(req, res, scope, caller, body, sessionId, found.session, found.record, ahead, !!warm);
      return;
    }
    if (req.method !== "POST" || !isInitializeRequest(body)) {
      return sendJson(res, 400, {
        jsonrpc: "2.0",
        error: { code: -32000, message: "No session: send initialize first" },
        id: null,
      });
    }
    const thread = parseThreadHeader(headerThread);
    if (!thread || typeof headerThread !== "string")
      return sendJson(res, 400, {
        jsonrpc: "2.0",
        error: {
          code: -32602,
          message: "X-Slaude-Thread: <team_id>/<channel_id>/<thread_ts> is required to open a session",
        },
        id: null,
      });
    const verdict = await this.tenants.check(caller.binding, thread.teamId);
    if (!verdict.ok) {
      const r = refusalOf(verdict.reason, thread.teamId);
      return sendMcpRefusal(res, r.status, r.code, r.message);
    }
    const init = InitializeParamsSchema.safeParse(body.params);
    if (!init.success || JSON.stringify(init.data).length > MAX_INITIALIZE_JSON) {
      return sendJson(res, 400, {
        jsonrpc: "2.0",
        error: {
          code: -32602,
          message: `initialize params must name protocolVersion, capabilities and clientInfo, in at most ${MAX_INITIALIZE_JSON / 1024} KiB`,
        },
        id: null,
      });
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
