import { errorMessage } from "../domain/errors.js";
import type { ThreadRef } from "../domain/thread.js";
import type { BorrowCandidate, CandidateConnection } from "../policy/resolve.js";
import type { CandidateQuery, CandidateRow, ConnectionMeta } from "../store/store.js";
import type { CallPlan } from "./call-plan.js";
import type { BrokerDeps } from "./deps.js";

// The facts stage: everything the policy needs about the caller's standing, gathered once, with
// one store query. The same query family and the same borrow rule serve connections_list.

/** Most candidate rows one call considers: more than any thread's participants can own. */
export const MAX_CALL_CANDIDATES = 1_000;

/** The connection facts of one call, as the policy reads them. */
export interface ConnectionFacts {
  readonly callerIsMember: boolean;
  readonly own: CandidateConnection | undefined;
  readonly others: readonly BorrowCandidate[];
  readonly shared: CandidateConnection | undefined;
}

/** Whether a membership answer says yes; an unreachable source is a no (fail closed), logged. */
export async function isMember(d: Pick<BrokerDeps, "membership" | "log">, thread: ThreadRef, userId: string): Promise<boolean> {
  try {
    return await d.membership.isMember(thread.teamId, thread.channelId, userId);
  } catch (err) {
    d.log.warn("membership check failed; treating as not a member", { channelId: thread.channelId, error: errorMessage(err) });
    return false;
  }
}

/**
 * The borrow rule, in one place: another owner's connection can be borrowed in `thread` when it is
 * scoped to this thread, or scoped to its owner and the owner took part in the thread.
 */
export function borrowable(c: ConnectionMeta, caller: string, thread: ThreadRef, participants: ReadonlySet<string>): c is ConnectionMeta & { ownerUserId: string } {
  if (c.ownerUserId === null || c.ownerUserId === caller || c.teamId !== thread.teamId) return false;
  const inThread = c.scope === "thread" && c.channelId === thread.channelId && c.threadTs === thread.threadTs;
  return inThread || (c.scope === "user" && participants.has(c.ownerUserId));
}

/** The candidate query of `caller` in `thread` (one service, or all of them for connections_list). */
export async function candidateQuery(d: Pick<BrokerDeps, "turns" | "clock">, thread: ThreadRef, caller: string, opts: Pick<CandidateQuery, "own" | "limit"> & { service?: string; after?: string }): Promise<CandidateQuery> {
  return {
    thread,
    caller,
    participants: [...(await d.turns.participantsOf(thread))],
    now: d.clock.now(),
    ...opts,
  };
}

const NONE: ConnectionFacts = { callerIsMember: false, own: undefined, others: [], shared: undefined };

/** Gathers the facts of `plan`: membership first (a non-member learns nothing), then one candidates query. */
export async function gatherCallFacts(d: BrokerDeps, plan: CallPlan): Promise<ConnectionFacts> {
  const { caller, service, thread } = plan;
  if (!caller || !service) return NONE;
  if (!(await isMember(d, thread, caller))) return NONE;
  // The warm path: the caller's own row, remembered by the store until a connection row changes.
  const mine = await d.store.connections.ownConnection({ thread, caller, service: service.name, now: d.clock.now() });
  if (mine) return { callerIsMember: true, own: candidate(mine), others: [], shared: undefined };
  const q = await candidateQuery(d, thread, caller, { own: "here", service: service.name, limit: MAX_CALL_CANDIDATES });
  const rows = await d.store.connections.candidates(q);
  const own = ownFirst(rows, caller);
  if (own) return { callerIsMember: true, own: candidate(own), others: [], shared: undefined };
  const participants = new Set(q.participants);
  const others: BorrowCandidate[] = [];
  let shared: CandidateConnection | undefined;
  for (const r of rows) {
    const c = r.connection;
    if (c.scope === "shared") shared ??= candidate(c);
    else if (borrowable(c, caller, thread, participants)) others.push({ ...candidate(c), ownerUserId: c.ownerUserId, grant: r.granted, ownerIsMember: await isMember(d, thread, c.ownerUserId) });
  }
  return { callerIsMember: true, own: undefined, others, shared };
}

/** The caller's own row usable here: the thread-scoped one first, then the oldest. */
export function ownFirst(rows: readonly CandidateRow[], caller: string): ConnectionMeta | undefined {
  let best: ConnectionMeta | undefined;
  for (const { connection: c } of rows) {
    if (c.ownerUserId !== caller || c.status !== "active" || c.scope === "shared") continue;
    if (!best || rank(c) < rank(best) || (rank(c) === rank(best) && c.createdAt < best.createdAt)) best = c;
  }
  return best;
}

const rank = (c: ConnectionMeta) => (c.scope === "thread" ? 0 : 1);
const candidate = (c: ConnectionMeta): CandidateConnection => ({ id: c.id, ownerUserId: c.ownerUserId, createdAt: c.createdAt });
