import { borrowable } from "../policy/borrow.js";
import type { Connection } from "../store/records.js";
import type { CandidateRow } from "../store/store.js";
import { type ConnectionUnavailable, unavailableOf } from "./availability-view.js";
import { candidateQuery, isMember } from "./call-facts.js";
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
  /** Why this connection's vendor cannot be used now (backoff, rejected credential, failed start). */
  readonly unavailable?: ConnectionUnavailable;
}

/** Rows read per page of the candidates query, and the most connections_list shows. */
export const LIST_PAGE = 200;
export const LIST_MAX = 1_000;

/**
 * connections_list: the caller's own connections and those usable in this thread whose owners are
 * current members, read page by page through the same indexed query (and borrow rule) as mcp_call;
 * `more` when over LIST_MAX rows were left out.
 */
export async function listConnections(
  d: BrokerDeps,
  ctx: CallerContext,
  caller: string,
): Promise<{ rows: ListedConnection[]; more: boolean }> {
  const { thread } = ctx;
  const rows: CandidateRow[] = [];
  let more = false;
  for (let after: string | undefined; ; ) {
    const page = await d.store.connections.candidates(
      await candidateQuery(d, thread, caller, {
        own: "everywhere",
        limit: LIST_PAGE,
        ...(after !== undefined ? { after } : {}),
      }),
    );
    rows.push(...page);
    after = page.at(-1)?.connection.id;
    if (page.length < LIST_PAGE || after === undefined) break;
    if (rows.length >= LIST_MAX) {
      more = true;
      break;
    }
  }
  const now = d.clock.now();
  const participants = new Set(await d.turns.participantsOf(thread));
  const backoff = (id: string) => {
    const b = d.backoff.backoffOf(id);
    const u = unavailableOf(d, id);
    return { ...(b ? { unreachableUntil: new Date(b.retryAt).toISOString() } : {}), ...(u ? { unavailable: u } : {}) };
  };
  const byAge = (a: CandidateRow, b: CandidateRow) =>
    a.connection.createdAt - b.connection.createdAt || (a.connection.id < b.connection.id ? -1 : 1);
  const mine: ListedConnection[] = [];
  const others: ListedConnection[] = [];
  for (const { connection: c, granted, grantsGiven } of [...rows].sort(byAge)) {
    const base = {
      id: c.id,
      service: c.service,
      scope: c.scope,
      expiresAt: new Date(c.expiresAt).toISOString(),
      ...backoff(c.id),
    };
    if (c.ownerUserId === caller) {
      const inThread = c.scope === "thread" && c.channelId === thread.channelId && c.threadTs === thread.threadTs;
      const where = c.scope === "user" ? "everywhere" : inThread ? "this_thread" : "other_thread";
      mine.push({
        ...base,
        owner: caller,
        mine: true,
        where,
        status: c.expiresAt <= now ? "expired" : c.status,
        grantsGiven,
      });
    } else if (c.scope === "shared") {
      others.push({ ...base, owner: null, mine: false, where: "shared", status: c.status });
    } else if (borrowable(c, caller, thread, participants) && (await isMember(d, thread, c.ownerUserId))) {
      others.push({
        ...base,
        owner: c.ownerUserId,
        mine: false,
        where: c.scope === "user" ? "everywhere" : "this_thread",
        status: c.status,
        grant: granted ? "granted" : "needs_approval",
      });
    }
  }
  return { rows: [...mine, ...others], more };
}

/** connections_revoke: the caller's own live connections matching the filter; their children and grants go too. */
export async function revokeConnections(
  d: BrokerDeps,
  ctx: CallerContext,
  caller: string,
  f: { service?: string; connectionId?: string },
): Promise<Connection[]> {
  const mine = await d.store.connections.list({
    teamId: ctx.thread.teamId,
    ownerUserId: caller,
    statuses: ["active", "needs_login"],
  });
  const targets = mine.filter(
    (c) => (!f.connectionId || c.id === f.connectionId) && (!f.service || c.service === f.service),
  );
  const ended: Connection[] = [];
  for (const c of targets) {
    const e = await d.lifecycle.revoke(c.id, caller, "revoked by owner");
    if (e) ended.push(e);
  }
  return ended;
}
