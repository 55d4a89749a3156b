import type { Connection } from "../store/records.js";
import type { BrokerDeps, CallerContext } from "./deps.js";

/** One row of connections_list: identifiers, state and expiry, never secrets. */
export interface ListedConnection {
  readonly id: string;
  readonly service: string;
  readonly owner: string | null;
  readonly mine: boolean;
  readonly scope: Connection["scope"];
  readonly where: "this_thread" | "other_thread" | "everywhere" | "shared";
  readonly status: Connection["status"];
  readonly expiresAt: string;
  /** For others' connections: whether the caller holds a grant here (else using it asks the owner). */
  readonly grant?: "granted" | "needs_approval";
  /** For mine: how many live grants I gave on it. */
  readonly grantsGiven?: number;
  readonly unreachableUntil?: string;
}

/** connections_list: the caller's own connections and those usable in this thread whose owners are current members. */
export async function listConnections(d: BrokerDeps, ctx: CallerContext, caller: string): Promise<ListedConnection[]> {
  const { thread } = ctx;
  const now = d.clock.now();
  const out: ListedConnection[] = [];
  const backoff = (id: string) => {
    const b = d.backoffOf(id);
    return b ? { unreachableUntil: new Date(b.retryAt).toISOString() } : {};
  };
  const inThread = (c: Connection) => c.scope === "thread" && c.channelId === thread.channelId && c.threadTs === thread.threadTs;
  const mine = await d.store.connections.list({ teamId: thread.teamId, ownerUserId: caller, statuses: ["active", "needs_login"] });
  for (const c of mine) {
    const given = await d.store.grants.list({ connectionId: c.id, liveOnly: true });
    out.push({
      id: c.id,
      service: c.service,
      owner: caller,
      mine: true,
      scope: c.scope,
      where: c.scope === "user" ? "everywhere" : inThread(c) ? "this_thread" : "other_thread",
      status: c.expiresAt <= now ? "expired" : c.status,
      expiresAt: new Date(c.expiresAt).toISOString(),
      grantsGiven: given.length,
      ...backoff(c.id),
    });
  }
  const participants = d.turns.participantsOf(thread);
  const live = (await d.store.connections.list({ teamId: thread.teamId, statuses: ["active"] })).filter((c) => c.expiresAt > now);
  for (const c of live) {
    if (c.ownerUserId === caller) continue;
    if (c.scope === "shared") {
      out.push({ id: c.id, service: c.service, owner: null, mine: false, scope: c.scope, where: "shared", status: c.status, expiresAt: new Date(c.expiresAt).toISOString(), ...backoff(c.id) });
      continue;
    }
    if (!c.ownerUserId || !(inThread(c) || (c.scope === "user" && participants.has(c.ownerUserId)))) continue;
    let member = false;
    try {
      member = await d.membership.isMember(thread.teamId, thread.channelId, c.ownerUserId);
    } catch {
      member = false;
    }
    if (!member) continue;
    const grant = await d.store.grants.findLive(c.id, caller, thread);
    out.push({
      id: c.id,
      service: c.service,
      owner: c.ownerUserId,
      mine: false,
      scope: c.scope,
      where: c.scope === "user" ? "everywhere" : "this_thread",
      status: c.status,
      expiresAt: new Date(c.expiresAt).toISOString(),
      grant: grant ? "granted" : "needs_approval",
      ...backoff(c.id),
    });
  }
  return out;
}

/** connections_revoke: the caller's own live connections matching the filter; their children and grants go too. */
export async function revokeConnections(d: BrokerDeps, ctx: CallerContext, caller: string, f: { service?: string; connectionId?: string }): Promise<Connection[]> {
  const mine = await d.store.connections.list({ teamId: ctx.thread.teamId, ownerUserId: caller, statuses: ["active", "needs_login"] });
  const targets = mine.filter((c) => (!f.connectionId || c.id === f.connectionId) && (!f.service || c.service === f.service));
  const ended: Connection[] = [];
  for (const c of targets) {
    const e = await d.lifecycle.revoke(c.id, caller, "revoked by owner");
    if (e) ended.push(e);
  }
  return ended;
}
