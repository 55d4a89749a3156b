import { randomUUID } from "node:crypto";
import type http from "node:http";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
import type { Broker } from "../broker/broker.js";
import type { Logger } from "../log/logger.js";
import type { ThreadRef } from "../store/records.js";
import { threadKey, TURN_ID_PATTERN } from "../turns/turn-state.js";
import { readBody, type HostTokenAuth, type OriginGuard } from "./host-auth.js";
import { sendJson, type RouteHandler } from "./http-server.js";

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

interface Session {
  readonly transport: StreamableHTTPServerTransport;
  readonly server: McpServer;
  readonly thread: ThreadRef;
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
  private readonly sessions = new Map<string, Session>();

  constructor(
    private readonly broker: Broker,
    private readonly auth: HostTokenAuth,
    private readonly origin: OriginGuard,
    private readonly log: Logger,
  ) {}

  get sessionCount(): number {
    return this.sessions.size;
  }

  readonly handler: RouteHandler = async (req, res) => {
    if (!guardHostRequest(req, res, this.auth, this.origin) || !turnHeaderWellFormed(req, res)) return;
    const sessionId = req.headers["mcp-session-id"];
    const headerThread = req.headers["x-slaude-thread"];
    let body: unknown;
    if (req.method === "POST") {
      try {
        body = JSON.parse(await readBody(req, 4 << 20));
      } catch {
        return sendJson(res, 400, { jsonrpc: "2.0", error: { code: -32700, message: "Parse error" }, id: null });
      }
    }
    if (typeof sessionId === "string") {
      const s = this.sessions.get(sessionId);
      if (!s) return sendJson(res, 404, { jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null });
      if (headerThread !== undefined) {
        const t = parseThreadHeader(headerThread);
        if (!t || threadKey(t) !== threadKey(s.thread)) return sendJson(res, 403, { jsonrpc: "2.0", error: { code: -32003, message: "This session is bound to another thread" }, id: null });
      }
      await s.transport.handleRequest(req, res, body);
      return;
    }
    if (req.method !== "POST" || !isInitializeRequest(body)) {
      return sendJson(res, 400, { jsonrpc: "2.0", error: { code: -32000, message: "No session: send initialize first" }, id: null });
    }
    const thread = parseThreadHeader(headerThread);
    if (!thread) return sendJson(res, 400, { jsonrpc: "2.0", error: { code: -32602, message: "X-Slaude-Thread: <team_id>/<channel_id>/<thread_ts> is required to open a session" }, id: null });
    const server = this.broker.serverForThread(thread);
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        this.sessions.set(id, { transport, server, thread });
      },
    });
    transport.onclose = () => {
      if (transport.sessionId) this.sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  };

  async close(): Promise<void> {
    const all = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.all(all.map((s) => s.server.close().catch(() => {})));
  }
}
