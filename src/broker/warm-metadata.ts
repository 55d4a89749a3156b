import type { Service } from "../config/registry.js";
import type { Connection } from "../store/records.js";
import { candidateQuery, isMember, MAX_CALL_CANDIDATES } from "./call-facts.js";
import type { CredentialSessions } from "./credential-session.js";
import type { BrokerDeps, CallerContext } from "./deps.js";

// mcp_describe asked for a tool of a service no vendor of this team has run yet: the caller's own
// (or the shared) connection's vendor is started once, and the pool caches its tool list.

/**
 * Starts the vendor of the caller's own connection to `service` (else the service's shared one,
 * never another member's) so its tool list reaches the metadata cache; false when there is none,
 * the caller is not a member, or the vendor does not start. Runs no tool.
 */
export async function warmMetadata(
  d: BrokerDeps,
  sessions: CredentialSessions,
  ctx: CallerContext,
  caller: string,
  service: Service,
): Promise<boolean> {
  if (!(await isMember(d, ctx.thread, caller))) return false;
  const { connections } = d.store;
  const mine = { thread: ctx.thread, caller, service: service.name, now: d.clock.now() };
  const own = await connections.ownConnection(mine);
  const row = own ?? (await sharedRow(d, ctx, caller, service));
  if (!row) return false;
  try {
    // The pool refreshes the metadata before it hands a new vendor over: once leased, it is cached.
    await d.pool.withLease(sessions.lease(sessions.open(row, service), service), async () => {});
    return true;
  } catch (err) {
    d.log.warn("tool list could not be fetched for mcp_describe", {
      service: service.name,
      connectionId: row.id,
      error: err instanceof Error ? err.name : "unknown",
    });
    return false;
  }
}

/** The service's shared row usable in the caller's thread, sealed secret included, if there is one. */
async function sharedRow(
  d: BrokerDeps,
  ctx: CallerContext,
  caller: string,
  service: Service,
): Promise<Connection | undefined> {
  const opts = { own: "here", service: service.name, limit: MAX_CALL_CANDIDATES } as const;
  const q = await candidateQuery(d, ctx.thread, caller, opts);
  const shared = (await d.store.connections.candidates(q)).find((r) => r.connection.scope === "shared");
  return shared ? d.store.connections.get(shared.connection.id) : undefined;
}
