import type { ToolClass } from "../config/registry.js";

// Who may run what on whose connection: a pure function of facts the orchestrator gathered.
// Brief §3. Reviewable on one screen; exhaustively table-tested in test/policy/resolve.test.ts.

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

/** Everything the decision depends on. */
export interface CallFacts {
  /** The live turn user of the session's thread, read at call time; undefined if no turn is known. */
  readonly caller: string | undefined;
  /** What the model claims; a cross-check only. */
  readonly onBehalfOf: string;
  readonly serviceKnown: boolean;
  readonly callerIsMember: boolean;
  readonly toolClass: ToolClass;
  /** The caller's own active connection usable in this thread. */
  readonly own: CandidateConnection | undefined;
  readonly others: readonly BorrowCandidate[];
  readonly shared: CandidateConnection | undefined;
}

/** The outcome: run on a connection, ask its owner, refuse, or send the caller to `connect`. */
export type CallDecision =
  | { readonly kind: "run"; readonly connectionId: string; readonly via: "own" | "grant" | "shared" }
  | { readonly kind: "ask_owner"; readonly connectionId: string; readonly ownerUserId: string; readonly reason: "no_grant" | "write_under_grant"; readonly grant: boolean }
  | { readonly kind: "refuse"; readonly code: RefusalCode; readonly turnUser?: string; readonly ownerUserId?: string }
  | { readonly kind: "needs_connect" };

/** Why a call is refused outright. */
export type RefusalCode = "no_turn" | "on_behalf_of_mismatch" | "unknown_service" | "not_member" | "owner_only";

/** Picks the borrow candidate deterministically: a granted one first, then the oldest, then by id. */
export function pickCandidate(others: readonly BorrowCandidate[]): BorrowCandidate | undefined {
  return [...others]
    .filter((o) => o.ownerIsMember)
    .sort((a, b) => Number(b.grant) - Number(a.grant) || a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))[0];
}

/** Decides how (and whether) a call runs. */
export function resolveCall(f: CallFacts): CallDecision {
  if (f.caller === undefined) return { kind: "refuse", code: "no_turn" };
  if (f.onBehalfOf !== f.caller) return { kind: "refuse", code: "on_behalf_of_mismatch", turnUser: f.caller };
  if (!f.serviceKnown) return { kind: "refuse", code: "unknown_service" };
  if (!f.callerIsMember) return { kind: "refuse", code: "not_member" };

  if (f.own) return { kind: "run", connectionId: f.own.id, via: "own" };

  const candidate = pickCandidate(f.others);
  if (candidate && f.toolClass.access === "borrowable") {
    if (!candidate.grant) return { kind: "ask_owner", connectionId: candidate.id, ownerUserId: candidate.ownerUserId, reason: "no_grant", grant: false };
    if (f.toolClass.write) return { kind: "ask_owner", connectionId: candidate.id, ownerUserId: candidate.ownerUserId, reason: "write_under_grant", grant: true };
    return { kind: "run", connectionId: candidate.id, via: "grant" };
  }

  if (f.shared && f.toolClass.access !== "personal") return { kind: "run", connectionId: f.shared.id, via: "shared" };

  // Someone here could run it, but the tool only ever runs as its owner.
  if (candidate) return { kind: "refuse", code: "owner_only", ownerUserId: candidate.ownerUserId };
  return { kind: "needs_connect" };
}
