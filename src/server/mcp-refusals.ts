// What /mcp checks of a request before any session and the JSON-RPC refusals it answers with:
// the body's size and JSON, the shape of X-Slaude-Turn, a session that is unknown or busy, and the
// cancellations a POST carries (announced to other replicas).

import type http from "node:http";
import { TURN_ID_PATTERN } from "../turns/turn-state.js";
import { BodyTooLargeError, readBody } from "./host-auth.js";
import { sendJson } from "./http-server.js";
import type { McpSession } from "./mcp-sessions.js";
import { MAX_INITIALIZE_JSON } from "./session-records.js";

/** The largest JSON-RPC message /mcp accepts. */
const MAX_MCP_BODY = 4 << 20;

/**
 * The JSON of a POST to /mcp; a body too large (413, the connection then closed) or not JSON (400)
 * is answered here, and undefined returned. One promise over the read (no async wrapper around it).
 */
export function readMcpBody(
  req: http.IncomingMessage,
  res: http.ServerResponse,
): Promise<{ readonly body: unknown } | undefined> {
  return readBody(req, MAX_MCP_BODY).then(
    (text) => {
      try {
        return { body: JSON.parse(text) as unknown };
      } catch {
        return refuseBody(res, undefined);
      }
    },
    (err: unknown) => refuseBody(res, err),
  );
}

/** Answers a body that could not be read (too large: 413) or parsed (anything else: 400). */
function refuseBody(res: http.ServerResponse, err: unknown): undefined {
  if (err instanceof BodyTooLargeError) {
    // The rest of the body is not read: close the connection once the answer is out.
    sendJson(
      res,
      413,
      {
        jsonrpc: "2.0",
        error: { code: -32600, message: `Request body too large (the limit is ${MAX_MCP_BODY / (1 << 20)} MiB)` },
        id: null,
      },
      { connection: "close" },
    );
    return undefined;
  }
  sendJson(res, 400, { jsonrpc: "2.0", error: { code: -32700, message: "Parse error" }, id: null });
  return undefined;
}

/**
 * Refuses (400) an `X-Slaude-Turn` that is not shaped like a turn id; whether the turn is live in
 * the session's thread is decided at each tool call (TurnState.resolve).
 */
export function turnHeaderWellFormed(req: http.IncomingMessage, res: http.ServerResponse): boolean {
  const v = req.headers["x-slaude-turn"];
  if (v === undefined || (typeof v === "string" && TURN_ID_PATTERN.test(v))) return true;
  sendJson(res, 400, {
    jsonrpc: "2.0",
    error: { code: -32602, message: "X-Slaude-Turn must be a turn id returned by POST /v1/turns" },
    id: null,
  });
  return false;
}

/** A session id no replica knows (404). */
export const notFound = { jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null };
/** A session's request sent with another host token than the one that opened it (403). */
export const TOKEN_MISMATCH =
  "This session was opened with another host token: send every request of a session with the token that opened it.";
/** Every session is busy at the cap `max` (503). */
export const tooMany = (max: number) => ({
  jsonrpc: "2.0",
  error: {
    code: -32000,
    message: `Too many open MCP sessions (the limit is ${max} and all are busy); close one or retry later`,
  },
  id: null,
});

/** The request ids of the `notifications/cancelled` messages in a POST body (one message or a batch). */
export function cancelledIds(body: unknown): (string | number)[] {
  const ids: (string | number)[] = [];
  for (const m of Array.isArray(body) ? body : [body]) {
    const id =
      (m as { method?: unknown; params?: { requestId?: unknown } } | null)?.method === "notifications/cancelled"
        ? (m as { params?: { requestId?: unknown } }).params?.requestId
        : undefined;
    if (typeof id === "string" || typeof id === "number") ids.push(id);
  }
  return ids;
}

/**
 * Delivers a cancellation announced by another replica to session `s`'s transport, when this
 * replica holds it open: the SDK aborts the request when it runs here and ignores it otherwise.
 */
export async function deliverCancellation(
  s: McpSession | undefined,
  sessionId: string,
  requestId: string | number,
): Promise<boolean> {
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

/** A JSON-RPC error answer with no request id (the request was refused before any method ran). */
export function sendRpcError(res: http.ServerResponse, status: number, code: number, message: string): void {
  sendJson(res, status, { jsonrpc: "2.0", error: { code, message }, id: null });
}

/** Why an initialize without a usable X-Slaude-Thread is refused. */
export const NEEDS_THREAD = "X-Slaude-Thread: <team_id>/<channel_id>/<thread_ts> is required to open a session";

/** Why an initialize whose parameters do not parse (or are too large) is refused. */
export const BAD_INITIALIZE = `initialize params must name protocolVersion, capabilities and clientInfo, in at most ${MAX_INITIALIZE_JSON / 1024} KiB`;
