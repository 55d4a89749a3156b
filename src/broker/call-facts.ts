import type { ThreadRef } from "../domain/thread.js";
import type { PinGate } from "../pinning/policy.js";
import type { PinRead } from "../pinning/service.js";
import { borrowable } from "../policy/borrow.js";
import type { BorrowCandidate, CallFacts, CandidateConnection } from "../policy/resolve.js";
import type { Connection } from "../store/records.js";
import type { CandidateQuery, ConnectionMeta } from "../store/store.js";
import { threadKey } from "../turns/turn-rules.js";
import type { CallPlan } from "./call-plan.js";
import type { BrokerDeps } from "./deps.js";
import type { FactsAhead } from "./tool-request.js";

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
 * `ahead`: the own-row and pin reads the MCP endpoint started for this request, used only if they
 * were made for this plan's caller, thread, service and tool (see FactsAhead).
 */
export async function gatherCallFacts(d: BrokerDeps, plan: CallPlan, ahead?: FactsAhead): Promise<GatheredFacts> {
  const early = ahead && aheadFits(ahead, plan) ? ahead : undefined;
  // Independent reads, asked together: on PostgreSQL the pin's round trip overlaps the connection's.
  const [connections, pin] = await Promise.all([gatherConnectionFacts(d, plan, early?.own), pinFacts(d, plan, early)]);
  return {
    caller: plan.caller,
    onBehalfOf: plan.onBehalfOf,
    serviceKnown: plan.service !== undefined,
    toolClass: plan.toolClass,
    pin: pin.gate,
    ...connections,
    ...(pin.read ? { pinRead: pin.read } : {}),
  };
}

/** The policy's facts, with the pin read they were gathered from (for the run-stage check while it is fresh). */
export type GatheredFacts = CallFacts & { readonly pinRead?: PinRead };

/** Whether the reads ahead were made for exactly this call: its live caller, thread, service and tool. */
export function aheadFits(a: FactsAhead, plan: CallPlan): boolean {
  return (
    plan.caller !== undefined &&
    a.caller === plan.caller &&
    a.threadKey === threadKey(plan.thread) &&
    a.service === plan.service?.name &&
    a.tool === plan.tool
  );
}

/**
 * Membership first (a non-member learns nothing), then the own row, else one candidates query.
 * `ownAhead`: the own row as read ahead for this very caller (used only once membership says yes).
 */
export async function gatherConnectionFacts(
  d: BrokerDeps,
  plan: Pick<CallPlan, "caller" | "service" | "thread">,
  ownAhead?: Promise<Connection | undefined>,
): Promise<ConnectionFacts> {
  const { caller, service, thread } = plan;
  if (!caller || !service) return NONE;
  if (!(await isMember(d, thread, caller))) return NONE;
  // The caller's own row, by the store's own-row order (and remembered by it until a connection row changes).
  const mine = await (ownAhead ??
    d.store.connections.ownConnection({ thread, caller, service: service.name, now: d.clock.now() }));
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

/**
 * The pin facts: whether the tool is quarantined, and which class rule applies (src/pinning), from
 * one read of the pin (the endpoint's, when `early`) that the run-stage check may use too while fresh.
 */
async function pinFacts(
  d: BrokerDeps,
  plan: CallPlan,
  early: Pick<FactsAhead, "pin"> | undefined,
): Promise<{ gate: PinGate; read?: PinRead }> {
  if (!plan.service || !plan.caller) return { gate: { kind: "run", planned: "unseen" } };
  const scope = { teamId: plan.thread.teamId, service: plan.service.name };
  const trust = { trustNewTools: plan.service.entry.trustNewTools };
  const read = early ? early.pin : d.pins.read(scope, plan.tool);
  // No read (a pin write was under way): the gate reads the pin itself.
  return read ? { gate: await d.pins.gateOf(read, trust), read } : { gate: await d.pins.gate(scope, plan.tool, trust) };
}

const candidate = (c: ConnectionMeta): CandidateConnection => ({
  id: c.id,
  ownerUserId: c.ownerUserId,
  createdAt: c.createdAt,
});
