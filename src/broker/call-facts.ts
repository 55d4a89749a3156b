import type { ThreadRef } from "../domain/thread.js";
import type { PinGate } from "../pinning/policy.js";
import { borrowable } from "../policy/borrow.js";
import type { BorrowCandidate, CallFacts, CandidateConnection } from "../policy/resolve.js";
import type { CandidateQuery, ConnectionMeta } from "../store/store.js";
import type { CallPlan } from "./call-plan.js";
import type { BrokerDeps } from "./deps.js";

// The facts stage: everything the policy (src/policy/resolve.ts) needs about the caller's
// standing, gathered once: membership, the own row, one candidates query, the tool's pin. The
// same query family and the same borrow rule serve connections_list. Nothing here decides.

/** Most candidate rows one call considers: more than any thread's participants can own. */
export const MAX_CALL_CANDIDATES = 1_000;

/** Whether a membership answer says yes; an unreachable source is a no (fail closed), logged. */
export async function isMember(
  d: Pick<BrokerDeps, "membership" | "log">,
  thread: ThreadRef,
  userId: string,
): Promise<boolean> {
  try {
    return await d.membership.isMember(thread.teamId, thread.channelId, userId);
  } catch (err) {
    const error = err instanceof Error ? err.message : String(err);
    d.log.warn("membership check failed; treating as not a member", { channelId: thread.channelId, error });
    return false;
  }
}

/** The candidate query of `caller` in `thread` (one service, or all of them for connections_list). */
export async function candidateQuery(
  d: Pick<BrokerDeps, "turns" | "clock">,
  thread: ThreadRef,
  caller: string,
  opts: Pick<CandidateQuery, "own" | "limit"> & { service?: string; after?: string },
): Promise<CandidateQuery> {
  return {
    thread,
    caller,
    participants: [...(await d.turns.participantsOf(thread))],
    now: d.clock.now(),
    ...opts,
  };
}

/** The connection facts of one call: what the policy reads about rows and membership. */
export type ConnectionFacts = Pick<CallFacts, "callerIsMember" | "own" | "others" | "shared">;

const NONE: ConnectionFacts = { callerIsMember: false, own: undefined, others: [], shared: undefined };

/**
 * Gathers the policy's input for `plan`: its identity facts, its connection facts, then its pin.
 * With `admitted` (the rate verdict still on its way), the pin and own-row reads start at once and
 * membership, the candidates and the decision wait for it: a refused call asks nothing more.
 */
export async function gatherCallFacts(d: BrokerDeps, plan: CallPlan, admitted?: Promise<boolean>): Promise<CallFacts> {
  // Independent reads, asked together: on PostgreSQL the pin's round trip overlaps the connection's.
  const [connections, pin] = await Promise.all([gatherConnectionFacts(d, plan, admitted), pinFacts(d, plan)]);
  return {
    caller: plan.caller,
    onBehalfOf: plan.onBehalfOf,
    serviceKnown: plan.service !== undefined,
    toolClass: plan.toolClass,
    pin,
    ...connections,
  };
}

/**
 * Membership first (a non-member learns nothing), then the own row, else one candidates query.
 * With `admitted`, the own row is read while the rate verdict is awaited (and used only once it
 * and membership say yes); membership itself is asked only of an admitted call.
 */
export async function gatherConnectionFacts(
  d: BrokerDeps,
  plan: Pick<CallPlan, "caller" | "service" | "thread">,
  admitted?: Promise<boolean>,
): Promise<ConnectionFacts> {
  const { caller, service, thread } = plan;
  if (!caller || !service) return NONE;
  // The caller's own row, by the store's own-row order (and remembered by it until a connection row changes).
  const ownRow = () => d.store.connections.ownConnection({ thread, caller, service: service.name, now: d.clock.now() });
  const early = admitted ? ownRow() : undefined;
  // Read ahead but not needed (refused, or not a member): its failure is not this call's.
  early?.catch(() => {});
  if (admitted && !(await admitted)) return NONE;
  if (!(await isMember(d, thread, caller))) return NONE;
  const mine = await (early ?? ownRow());
  if (mine) return { callerIsMember: true, own: candidate(mine), others: [], shared: undefined };
  const q = await candidateQuery(d, thread, caller, { own: "here", service: service.name, limit: MAX_CALL_CANDIDATES });
  const rows = await d.store.connections.candidates(q);
  const participants = new Set(q.participants);
  const others: BorrowCandidate[] = [];
  let shared: CandidateConnection | undefined;
  for (const r of rows) {
    const c = r.connection;
    if (c.scope === "shared") shared ??= candidate(c);
    else if (borrowable(c, caller, thread, participants)) {
      const ownerIsMember = await isMember(d, thread, c.ownerUserId);
      others.push({ ...candidate(c), ownerUserId: c.ownerUserId, grant: r.granted, ownerIsMember });
    }
  }
  return { callerIsMember: true, own: undefined, others, shared };
}

/** The pin facts: whether the tool is quarantined, and which class rule applies (src/pinning). */
async function pinFacts(d: BrokerDeps, plan: CallPlan): Promise<PinGate> {
  if (!plan.service || !plan.caller) return { kind: "run", planned: "unseen" };
  const scope = { teamId: plan.thread.teamId, service: plan.service.name };
  return d.pins.gate(scope, plan.tool, { trustNewTools: plan.service.entry.trustNewTools });
}

const candidate = (c: ConnectionMeta): CandidateConnection => ({
  id: c.id,
  ownerUserId: c.ownerUserId,
  createdAt: c.createdAt,
});
