import { randomUUID } from "node:crypto";
import type http from "node:http";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { Broker } from "../broker/broker.js";
import { systemClock, type Clock } from "../clock/clock.js";
import { PeriodicJob } from "../jobs/periodic-job.js";
import type { Logger } from "../log/logger.js";
import type { ThreadRef } from "../domain/thread.js";
import { TURN_ID_PATTERN } from "../turns/turn-state.js";
import { BodyTooLargeError, readBody, type HostTokenAuth, type OriginGuard } from "./host-auth.js";
import { sendJson, type RouteHandler } from "./http-server.js";
import { DEFAULT_SESSION_LIMITS, SessionTable, type McpSession, type SessionLimits } from "./mcp-sessions.js";

/** The largest JSON-RPC message /mcp accepts. */
const MAX_MCP_BODY = 4 << 20;

/** A Slack team or channel id as the host endpoints accept it. */
export const idPart = z.string().regex(/^[A-Za-z0-9._-]{1,64}$/);

/** Parses `X-Slaude-Thread: <team_id>/<channel_id>/<thread_ts>`. */
export function parseThreadHeader(v: string | string[] | undefined): ThreadRef | undefined {
  if (typeof v !== "string") return undefined;
  const parts = v.split("/");
  if (parts.length !== 3) return undefined;
  const [teamId, channelId, threadTs] = parts;
  if (!idPart.safeParse(teamId).success || !idPart.safeParse(channelId).success || !/^\d{1,12}\.\d{1,8}$/.test(threadTs ?? "")) return undefined;
  return { teamId: teamId!, channelId: channelId!, threadTs: threadTs! };
}

/** Shared guard of every host-facing route: Host/Origin, then the bearer host token. */
export function guardHostRequest(req: http.IncomingMessage, res: http.ServerResponse, auth: HostTokenAuth, origin: OriginGuard): boolean {
  const o = origin.check(req);
  if (o !== "ok") {
    sendJson(res, 403, { error: o });
    return false;
  }
  if (!auth.verify(req)) {
    sendJson(res, 401, { error: "unauthorized" }, { "www-authenticate": 'Bearer realm="slaude-connect"' });
    return false;
  }
  return true;
}

/**
 * Refuses (400) an `X-Slaude-Turn` that is not shaped like a turn id; whether the turn is live in
 * the session's thread is decided at each tool call (TurnState.resolve).
 */
function turnHeaderWellFormed(req: http.IncomingMessage, res: http.ServerResponse): boolean {
  const v = req.headers["x-slaude-turn"];
  if (v === undefined || (typeof v === "string" && TURN_ID_PATTERN.test(v))) return true;
  sendJson(res, 400, { jsonrpc: "2.0", error: { code: -32602, message: "X-Slaude-Turn must be a turn id returned by POST /v1/turns" }, id: null });
  return false;
}

/** The MCP endpoint: Streamable HTTP with stateful sessions, each bound to one thread when it opens. */
export class McpEndpoint {
  private readonly sessions: SessionTable;
  private readonly sweeper: PeriodicJob;

  constructor(
    private readonly broker: Broker,
    private readonly auth: HostTokenAuth,
    private readonly origin: OriginGuard,
    private readonly log: Logger,
    limits: SessionLimits = DEFAULT_SESSION_LIMITS,
    clock: Clock = systemClock,
  ) {
    this.sessions = new SessionTable(limits, clock, log);
    // Idle sessions are closed within a quarter of the idle time (at most a minute) after expiring.
    this.sweeper = new PeriodicJob({ name: "mcp session sweep", intervalMs: Math.max(1_000, Math.min(60_000, limits.idleMs / 4)), run: async () => this.sweepIdle(), log, clock });
    this.sweeper.start();
  }

  get sessionCount(): number {
    return this.sessions.size;
  }

  /** Open sessions with a request still being answered (they are never evicted or expired). */
  get busySessionCount(): number {
    return this.sessions.busyCount;
  }

  /** Closes sessions idle for SLAUDE_MCP_SESSION_IDLE_SECONDS; runs periodically, callable by tests. */
  sweepIdle(): number {
    return this.sessions.sweepIdle();
  }

  readonly handler: RouteHandler = async (req, res) => {
    if (!guardHostRequest(req, res, this.auth, this.origin) || !turnHeaderWellFormed(req, res)) return;
    const sessionId = req.headers["mcp-session-id"];
    const headerThread = req.headers["x-slaude-thread"];
    let body: unknown;
    if (req.method === "POST") {
      try {
        body = JSON.parse(await readBody(req, MAX_MCP_BODY));
      } catch (err) {
        if (err instanceof BodyTooLargeError) {
          // The rest of the body is not read: close the connection once the answer is out.
          return sendJson(res, 413, { jsonrpc: "2.0", error: { code: -32600, message: `Request body too large (the limit is ${MAX_MCP_BODY / (1 << 20)} MiB)` }, id: null }, { connection: "close" });
        }
        return sendJson(res, 400, { jsonrpc: "2.0", error: { code: -32700, message: "Parse error" }, id: null });
      }
    }
    if (typeof sessionId === "string") {
      const s = this.sessions.get(sessionId);
      if (!s || s.closed) return sendJson(res, 404, { jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null });
      // Parsed once, when the session opened: only the very same value names the same thread.
      if (headerThread !== undefined && headerThread !== s.threadHeader) {
        return sendJson(res, 403, { jsonrpc: "2.0", error: { code: -32003, message: "This session is bound to another thread" }, id: null });
      }
      this.sessions.track(sessionId, s, res, req.method !== "GET");
      await s.transport.handleRequest(req, res, body);
      return;
    }
    if (req.method !== "POST" || !isInitializeRequest(body)) {
      return sendJson(res, 400, { jsonrpc: "2.0", error: { code: -32000, message: "No session: send initialize first" }, id: null });
    }
    const thread = parseThreadHeader(headerThread);
    if (!thread || typeof headerThread !== "string") return sendJson(res, 400, { jsonrpc: "2.0", error: { code: -32602, message: "X-Slaude-Thread: <team_id>/<channel_id>/<thread_ts> is required to open a session" }, id: null });
    if (!this.sessions.reserve()) {
      // Every open session is in use: refuse clearly rather than close one mid-request.
      this.log.warn("mcp session refused: the session cap is reached and every session is busy", { maxSessions: this.sessions.limits.maxSessions });
      return sendJson(res, 503, { jsonrpc: "2.0", error: { code: -32000, message: `Too many open MCP sessions (the limit is ${this.sessions.limits.maxSessions} and all are busy); close one or retry later` }, id: null }, { "retry-after": "5" });
    }
    try {
      const server = this.broker.serverForThread(thread);
      let session: McpSession | undefined;
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          session = { transport, server, thread, threadHeader: headerThread, busy: 0, closed: false };
          this.sessions.add(id, session);
        },
      });
      transport.onclose = () => {
        if (transport.sessionId && session) this.sessions.remove(transport.sessionId, session);
      };
      await server.connect(transport);
      await transport.handleRequest(req, res, body);
    } finally {
      this.sessions.release();
    }
  };

  async close(): Promise<void> {
    await this.sweeper.stop();
    await this.sessions.closeAll();
  }
}
