import type http from "node:http";
import type { Broker } from "../broker/broker.js";
import type { TurnAhead } from "../broker/tool-request.js";
import type { HostBinding } from "../tenancy/host-binding.js";
import { threadKey } from "../turns/turn-rules.js";
import type { HostCaller } from "./host-teams.js";
import { parseThreadHeader } from "./thread-header.js";

// With shared session records (PostgreSQL) a request's session is one round trip and its caller's
// turn another: for a tool call, the MCP endpoint starts the turn read while it looks the session
// up, so the two overlap. Nothing is decided here: the tool handler uses the read only if the
// session turns out bound to the very thread read, for the very turn id.

/**
 * The turn read for `req`, started now, when it is one `tools/call` naming its thread in a team the
 * host token may name (a malformed header reads nothing ahead).
 */
export function turnAhead(
  broker: Pick<Broker, "turns" | "deps">,
  req: http.IncomingMessage,
  body: unknown,
  caller: HostCaller,
): TurnAhead | undefined {
  if (Array.isArray(body) || (body as { method?: unknown } | null)?.method !== "tools/call") return undefined;
  const headerThread = req.headers["x-slaude-thread"];
  const thread = typeof headerThread === "string" ? parseThreadHeader(headerThread) : undefined;
  if (!thread || !mayName(caller.binding, thread.teamId)) return undefined;
  // A repeated header (node joins it) is read as the handler reads it: one string, refused there as unknown.
  const header = req.headers["x-slaude-turn"];
  const turnId = typeof header === "string" ? header : undefined;
  if (header !== undefined && turnId === undefined) return undefined;
  const resolution = broker.turns.resolve(thread, turnId, broker.deps.clock.now());
  // Awaited by the handler; dropped unread when the request is refused first.
  resolution.catch(() => {});
  return { threadKey: threadKey(thread), turnId, resolution };
}

/**
 * Whether a token so bound may name `teamId`, as far as is known without the tenant directory:
 * a team-bound token only its team; an unbound one (one installation) any; an enterprise-bound one
 * nothing ahead, since which teams its org holds is the directory's to say. The tenant guard still
 * decides every request: a read ahead it refuses is dropped unread.
 */
function mayName(binding: HostBinding, teamId: string): boolean {
  return binding.kind === "unbound" || (binding.kind === "team" && binding.teamId === teamId);
}
