import { FAIL_CLOSED_CLASS, type ToolClass } from "../config/registry.js";
import type { PinGate } from "../pinning/policy.js";

// Who may run what on whose connection: a pure function of facts the orchestrator gathered
// (src/broker/call-facts.ts gathers them for mcp_call). Brief §3. Reviewable on one screen;
// exhaustively table-tested in test/policy/resolve.test.ts. Which rows are candidates at all is
// in ./borrow.ts (the borrow rule) and src/store/sql/candidates.ts (the own-row order).

/** A connection as the policy sees it. */
export interface CandidateConnection {
  readonly id: string;
  /** Null for the shared identity. */
  readonly ownerUserId: string | null;
  readonly createdAt: number;
}

/** Another member's connection usable in this thread, with the caller's standing there. */
export interface BorrowCandidate extends CandidateConnection {
  readonly ownerUserId: string;
  /** The owner is a current member of the thread's channel. */
  readonly ownerIsMember: boolean;
  /** The caller holds a live grant on it in this thread. */
  readonly grant: boolean;
}

/**
 * Everything the decision depends on, gathered before it is taken:
 * - `caller`: the live turn user of the session's thread, read at call time; undefined if no turn is known.
 * - `onBehalfOf`: what the model claims; a cross-check only.
 * - `toolClass`: the registry's class of the tool (the fail-closed class for an unknown service or tool).
 * - `pin`: the pin gate's verdict on the tool (src/pinning/policy.ts `gate`).
 * - `own`: the caller's own usable row, the first by the store's own-row order (thread-scoped first, then oldest).
 * - `others`: other owners' rows the borrow rule admits here, in any order (`pickCandidate` orders them).
 * - `shared`: the service's shared row usable here.
 */
export interface CallFacts {
  readonly caller: string | undefined;
  readonly onBehalfOf: string;
  readonly serviceKnown: boolean;
  readonly callerIsMember: boolean;
  readonly toolClass: ToolClass;
  readonly pin: PinGate;
  readonly own: CandidateConnection | undefined;
  readonly others: readonly BorrowCandidate[];
  readonly shared: CandidateConnection | undefined;
}

/** The outcome: run on a connection, ask its owner, refuse, or send the caller to `connect`. */
export type CallDecision =
  | { readonly kind: "run"; readonly connectionId: string; readonly via: "own" | "grant" | "shared" }
  | {
      readonly kind: "ask_owner";
      readonly connectionId: string;
      readonly ownerUserId: string;
      readonly reason: "no_grant" | "write_under_grant";
      readonly grant: boolean;
    }
  | { readonly kind: "refuse"; readonly code: RefusalCode; readonly turnUser?: string; readonly ownerUserId?: string }
  | { readonly kind: "refuse"; readonly code: PinRefusalCode; readonly pin: PinStatus }
  | { readonly kind: "needs_connect" };

/** Why a call is refused outright. */
export type RefusalCode = "no_turn" | "on_behalf_of_mismatch" | "unknown_service" | "not_member" | "owner_only";
/** Why a call is refused for its tool's pin: changed or rejected, or new and not reviewed. */
export type PinRefusalCode = "tool_quarantined" | "tool_unreviewed";
type PinStatus = Extract<PinGate, { kind: "refuse" }>["status"];

/** Picks the borrow candidate deterministically: a granted one first, then the oldest, then by id. */
export function pickCandidate(others: readonly BorrowCandidate[]): BorrowCandidate | undefined {
  const byId = (a: BorrowCandidate, b: BorrowCandidate) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  return [...others]
    .filter((o) => o.ownerIsMember)
    .sort((a, b) => Number(b.grant) - Number(a.grant) || a.createdAt - b.createdAt || byId(a, b))[0];
}

/** The class a call runs under: a trusted new tool runs under the fail-closed class, whatever the registry says. */
export function effectiveClass(toolClass: ToolClass, pin: PinGate): ToolClass {
  return pin.kind === "run" && pin.planned === "new" ? FAIL_CLOSED_CLASS : toolClass;
}

/** Decides how (and whether) a call runs. */
export function resolveCall(f: CallFacts): CallDecision {
  if (f.caller === undefined) return { kind: "refuse", code: "no_turn" };
  if (f.onBehalfOf !== f.caller) return { kind: "refuse", code: "on_behalf_of_mismatch", turnUser: f.caller };
  if (!f.serviceKnown) return { kind: "refuse", code: "unknown_service" };
  if (!f.callerIsMember) return { kind: "refuse", code: "not_member" };
  const choice = chooseConnection(f, effectiveClass(f.toolClass, f.pin));
  // Past those checks a quarantined, rejected or unreviewed tool is refused before any approval,
  // grant or vendor; an owner-only refusal stands as it is (the tool would not run here anyway).
  if (f.pin.kind === "refuse" && choice.kind !== "refuse") {
    return { kind: "refuse", code: f.pin.status === "new" ? "tool_unreviewed" : "tool_quarantined", pin: f.pin.status };
  }
  return choice;
}

/** Whose connection a call of class `c` by a known member caller runs on. */
function chooseConnection(f: CallFacts, c: ToolClass): CallDecision {
  if (f.own) return { kind: "run", connectionId: f.own.id, via: "own" };

  const candidate = pickCandidate(f.others);
  if (candidate && c.access === "borrowable") {
    const ask = { kind: "ask_owner", connectionId: candidate.id, ownerUserId: candidate.ownerUserId } as const;
    if (!candidate.grant) return { ...ask, reason: "no_grant", grant: false };
    if (c.write) return { ...ask, reason: "write_under_grant", grant: true };
    return { kind: "run", connectionId: candidate.id, via: "grant" };
  }

  if (f.shared && c.access !== "personal") return { kind: "run", connectionId: f.shared.id, via: "shared" };

  // Someone here could run it, but the tool only ever runs as its owner.
  if (candidate) return { kind: "refuse", code: "owner_only", ownerUserId: candidate.ownerUserId };
  return { kind: "needs_connect" };
}
