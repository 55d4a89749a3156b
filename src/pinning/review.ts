import type { Clock } from "../clock/clock.js";
import type { AdminCheck } from "../connections/grants-admin.js";
import type { PinStatus } from "../store/records.js";
import type { Store } from "../store/store.js";
import { type DiffLine, diffDefinitions } from "./diff.js";
import type { DecisionRefusal } from "./policy.js";
import type { PinService } from "./service.js";

// The admin's review of tool definition changes from a workspace view (the console, the Slack App
// Home): the same PinService decision the CLI applies (same audit rows, same hash binding), behind
// an admin check of the person clicking. A non-admin's attempt is refused and audited.

/** Most changes one admin view lists (the CLI lists more). */
export const MAX_REVIEW_ITEMS = 50;

/** One tool change as an admin reviews it: the facts, the waiting definition's hash, and the diff. */
export interface ReviewItem {
  readonly teamId: string;
  readonly service: string;
  readonly tool: string;
  readonly status: PinStatus;
  readonly changedAt: number;
  readonly pinnedHash: string | null;
  /** The definition an accept or reject is bound to. */
  readonly pendingHash: string | null;
  /** The accepted definition (-) against the waiting one (+). */
  readonly diff: readonly DiffLine[];
}

/** An admin's accept or reject from a view, bound to the definition hash the admin saw. */
export interface ReviewDecision {
  readonly kind: "accept" | "reject";
  readonly service: string;
  readonly tool: string;
  readonly hash: string;
}

/** What a decision from a view did. */
export type ReviewOutcome =
  | { readonly kind: "not_admin" }
  | { readonly kind: "refused"; readonly reason: DecisionRefusal }
  | { readonly kind: "done"; readonly status: PinStatus };

/** One sentence per refusal, shown to the admin (the console and Slack say the same). */
export function refusalSentence(reason: DecisionRefusal | "not_admin"): string {
  switch (reason) {
    case "not_admin":
      return "Only slaude-connect admins can accept or reject tool changes.";
    case "not_found":
      return "No such tool has been seen for that service in this team.";
    case "nothing_pending":
      return "Nothing is waiting for a decision on that tool any more (someone may have decided it already).";
    case "hash_mismatch":
      return "The vendor's definition changed again since this view was drawn: nothing was decided. Review the new diff and decide again.";
  }
}

/** The sentence for a decision that applied. */
export function doneSentence(d: ReviewDecision): string {
  return d.kind === "accept"
    ? `Accepted ${d.service}/${d.tool}: its new definition is pinned and calls to it run again.`
    : `Rejected the change to ${d.service}/${d.tool}: calls to it stay refused while its vendor serves that definition.`;
}

/** What a review needs: the pin service, who is an admin, and the audit log for refused attempts. */
export interface PinReviewDeps {
  readonly pins: Pick<PinService, "changes" | "decide">;
  readonly admins: AdminCheck;
  readonly store: Pick<Store, "audit">;
  readonly clock: Clock;
}

/** Lists and decides tool changes of one team for the person clicking, if an admin. */
export class PinReview {
  constructor(private readonly d: PinReviewDeps) {}

  /** The team's undecided changes with their diffs, newest first; undefined for a non-admin. */
  async list(teamId: string, userId: string, limit = MAX_REVIEW_ITEMS): Promise<ReviewItem[] | undefined> {
    if (!(await this.d.admins.isAdmin(teamId, userId))) return undefined;
    const rows = await this.d.pins.changes({ teamId, limit: Math.min(limit, MAX_REVIEW_ITEMS) });
    return rows.map((p) => ({
      teamId: p.teamId,
      service: p.service,
      tool: p.tool,
      status: p.status,
      changedAt: p.changedAt,
      pinnedHash: p.pinnedHash,
      pendingHash: p.pendingHash,
      diff: diffDefinitions(p.pinnedDefinition, p.pendingDefinition),
    }));
  }

  /**
   * Applies an admin's decision through PinService (audited there, refusals too), bound to `hash`:
   * a definition that changed after the admin looked is not decided on. A non-admin gets
   * `not_admin` and a `tool_pin` audit row `refused_not_admin`, and nothing changes.
   */
  async decide(teamId: string, userId: string, d: ReviewDecision): Promise<ReviewOutcome> {
    if (!(await this.d.admins.isAdmin(teamId, userId))) {
      await this.d.store.audit.append([
        {
          at: this.d.clock.now(),
          event: "tool_pin",
          teamId,
          service: d.service,
          tool: d.tool,
          decision: "refused_not_admin",
          argsHash: d.hash,
          actor: userId,
        },
      ]);
      return { kind: "not_admin" };
    }
    const r = await this.d.pins.decide(
      { teamId, service: d.service },
      { kind: d.kind, tool: d.tool, by: userId, expectedHash: d.hash },
    );
    return r.kind === "done" ? { kind: "done", status: r.pin.status } : { kind: "refused", reason: r.reason };
  }
}
