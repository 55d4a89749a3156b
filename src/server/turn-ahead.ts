import type http from "node:http";
import type { Broker } from "../broker/broker.js";
import type { BrokerDeps } from "../broker/deps.js";
import type { FactsAhead, TurnAhead } from "../broker/tool-request.js";
import { mcpCallTarget } from "../broker/tool-schemas.js";
import type { ThreadRef } from "../domain/thread.js";
import { threadKey } from "../turns/turn-rules.js";
import type { HostCaller } from "./host-teams.js";
import type { McpSession } from "./mcp-sessions.js";

// With shared session records (PostgreSQL) a request's session is one round trip and its caller's
// turn another: for a tool call, the MCP endpoint starts the turn read while it looks the session
// up, so the two overlap; for an mcp_call it reads the facts the call will need (the claimed
// caller's own row, the tool's pin) at the same time. Nothing is decided here: the tool handler
// uses the reads only if the session turns out bound to the very thread read, for the very turn id,
// and the call's facts stage only for the caller that turn names.

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
  const now = broker.deps.clock.now();
  // With shared turns that prove their reads, the same read also keeps what the warm memo needs.
  const proved = broker.turns.resolveProved?.(local.thread, turnId, now);
  const resolution = proved ? proved.then((p) => p.resolution) : broker.turns.resolve(local.thread, turnId, now);
  // Awaited by the handler; dropped unread when the request is refused first.
  resolution.catch(() => {});
  proved?.catch(() => {});
  const key = threadKey(local.thread);
  const facts = factsAhead(broker.deps, key, local.thread, (body as { params?: unknown }).params);
  return { threadKey: key, turnId, resolution, ...(proved ? { proved } : {}), ...(facts ? { facts } : {}) };
}

/**
 * For an mcp_call of a known service: its caller's own row and the tool's pin, read now for
 * the user its arguments claim (see FactsAhead: used only if the live turn names that user). A call
 * whose caller this replica has just refused for its rate reads nothing ahead (a flood reads nothing).
 */
function factsAhead(
  d: Pick<BrokerDeps, "registry" | "store" | "pins" | "clock" | "callRate">,
  key: string,
  thread: ThreadRef,
  params: unknown,
): FactsAhead | undefined {
  const p = params as { name?: unknown; arguments?: unknown } | null | undefined;
  if (p?.name !== "mcp_call") return undefined;
  const target = mcpCallTarget.safeParse(p.arguments);
  if (!target.success) return undefined;
  const { service: name, tool, on_behalf_of: caller } = target.data;
  const service = d.registry.get(name);
  if (!service || d.callRate?.refusedRecently(thread.teamId, caller)) return undefined;
  const q = { thread, caller, service: name, now: d.clock.now() };
  const both = d.store.connections.ownConnectionProved?.(q);
  const own = both ? both.then((b) => b.conn) : d.store.connections.ownConnection(q);
  const ownProof = both?.then((b) => b.proof);
  // Either may be dropped unread: its failure is then not the call's (the pin read handles its own).
  own.catch(() => {});
  ownProof?.catch(() => {});
  const pin = d.pins.read({ teamId: thread.teamId, service: name }, tool);
  const attempt = { ran: false, unproved: false };
  return { threadKey: key, caller, service: name, tool, own, pin, attempt, ...(ownProof ? { ownProof } : {}) };
}
