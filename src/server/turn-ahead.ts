import type http from "node:http";
import type { Broker } from "../broker/broker.js";
import type { TurnAhead } from "../broker/tool-request.js";
import { threadKey } from "../turns/turn-rules.js";
import type { HostCaller } from "./host-teams.js";
import type { McpSession } from "./mcp-sessions.js";

// With shared session records (PostgreSQL) a request's session is one round trip and its caller's
// turn another: for a tool call, the MCP endpoint starts the turn read while it looks the session
// up, so the two overlap. Nothing is decided here: the tool handler uses the read only if the
// session turns out bound to the very thread read, for the very turn id.

/**
 * The turn read for `req`, started now, when it is one `tools/call` of a session this replica holds
 * (`local`), opened by this very host token, for the thread its X-Slaude-Thread names byte for
 * byte. Anything else reads nothing ahead: the read (which may refresh the thread's served mark) is
 * only ever made for a thread a session of this host is already bound to. The record is still
 * looked up and every check still runs; a read the request is then refused after is dropped unread.
 */
export function turnAhead(
  broker: Pick<Broker, "turns" | "deps">,
  req: http.IncomingMessage,
  body: unknown,
  caller: HostCaller,
  local: McpSession | undefined,
): TurnAhead | undefined {
  if (Array.isArray(body) || (body as { method?: unknown } | null)?.method !== "tools/call") return undefined;
  if (!local || local.closed || req.headers["x-slaude-thread"] !== local.threadHeader) return undefined;
  // The digest this token records under the current key: a string compare, not a second MAC check
  // (the lookup makes that one). A session opened under an older key just reads nothing ahead.
  if (local.tokenDigest !== caller.sessionDigest()) return undefined;
  // A repeated header arrives joined ("a, b"), as the tool handler reads it: refused there as unknown.
  const header = req.headers["x-slaude-turn"];
  const turnId = typeof header === "string" ? header : undefined;
  const resolution = broker.turns.resolve(local.thread, turnId, broker.deps.clock.now());
  // Awaited by the handler; dropped unread when the request is refused first.
  resolution.catch(() => {});
  return { threadKey: threadKey(local.thread), turnId, resolution };
}
