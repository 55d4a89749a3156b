import type { Service } from "../config/registry.js";
import { borrowable } from "../policy/borrow.js";
import type { Unavailability } from "../pool/availability.js";
import { candidateQuery, isMember, MAX_CALL_CANDIDATES } from "./call-facts.js";
import type { BrokerDeps, CallerContext } from "./deps.js";

// What the agent is told about services it cannot use right now, before it calls them: a remote
// vendor in connect backoff (until when, last error class), a remote that rejected the
// credential, a stdio command that failed to start. connections_list shows it per row and
// mcp_describe per service; no secret and no vendor text is in any of it.

/** A connection's vendor that cannot be used now, as the agent sees it (times in ISO 8601). */
export interface ConnectionUnavailable {
  readonly reason: Unavailability["reason"];
  readonly since: string;
  /** backoff: when the next connect is tried (calls before it are refused at once). */
  readonly retryAt?: string;
  /** backoff: consecutive failed connects. */
  readonly failures?: number;
  /** The broker's own class of the last error: "ECONNREFUSED", "http_503", "ENOENT", ... */
  readonly lastError: string;
}

/**
 * One entry of mcp_describe's `unavailable`: a connection of the caller's that cannot be used now.
 * Seam for tool pinning: a quarantined tool is another variant of this union
 * (`{ kind: "tool"; tool; reason: "quarantined"; ... }`), rendered by `unavailableLine`.
 */
export type UnavailableNote = { readonly kind: "connection"; readonly connectionId: string } & ConnectionUnavailable;

/** The agent's view of a launcher record, or undefined when the connection is usable. */
export function unavailableOf(d: Pick<BrokerDeps, "backoff">, connectionId: string): ConnectionUnavailable | undefined {
  const u = d.backoff.unavailableOf?.(connectionId);
  if (!u) return undefined;
  const iso = (ms: number) => new Date(ms).toISOString();
  return u.reason === "backoff"
    ? { reason: u.reason, since: iso(u.since), retryAt: iso(u.retryAt), failures: u.failures, lastError: u.lastError }
    : { reason: u.reason, since: iso(u.since), lastError: u.lastError };
}

/** One sentence fragment for a text answer: what is wrong and what happens next. */
export function unavailableText(u: ConnectionUnavailable, service: string): string {
  switch (u.reason) {
    case "backoff":
      return `unavailable: connecting failed ${u.failures ?? 1} time(s) (last error ${u.lastError}); calls are refused until ${u.retryAt}, then the next call tries again`;
    case "credential_rejected":
      return `unavailable: the service rejected the stored credential (${u.lastError}); reconnect with connect(${service})`;
    case "start_failed":
      return `unavailable: its command failed to start (${u.lastError}) at ${u.since}; the next call tries again`;
    case "incompatible":
      return `unavailable: it speaks another MCP protocol version (${u.lastError}); an operator sets "protocol" in the registry entry, waiting will not help`;
  }
}

/** A line of mcp_describe's text for one note. */
export function unavailableLine(n: UnavailableNote, service: string): string {
  return `Connection ${n.connectionId}: ${unavailableText(n, service)}.`;
}

/**
 * The connections to `service` the caller could use in this thread (own, shared, borrowable from a
 * current member) whose vendor cannot be used now; nothing for a non-member.
 */
export async function serviceUnavailable(
  d: BrokerDeps,
  ctx: CallerContext,
  caller: string,
  service: Service,
): Promise<UnavailableNote[]> {
  if (!d.backoff.unavailableOf) return [];
  const { thread } = ctx;
  if (!(await isMember(d, thread, caller))) return [];
  const q = await candidateQuery(d, thread, caller, { own: "here", service: service.name, limit: MAX_CALL_CANDIDATES });
  const participants = new Set(q.participants);
  const notes: UnavailableNote[] = [];
  for (const { connection: c } of await d.store.connections.candidates(q)) {
    const u = unavailableOf(d, c.id);
    if (!u) continue;
    const usable =
      c.ownerUserId === caller ||
      c.scope === "shared" ||
      (borrowable(c, caller, thread, participants) && (await isMember(d, thread, c.ownerUserId)));
    if (usable) notes.push({ kind: "connection", connectionId: c.id, ...u });
  }
  return notes;
}
