import type { Clock } from "../clock/clock.js";
import type { ClusterSignals } from "../cluster/signals.js";
import { errorMessage } from "../domain/errors.js";
import type { Logger } from "../log/logger.js";
import type { Metrics } from "../metrics/metrics.js";
import type { Approval } from "../store/records.js";
import type { Store } from "../store/store.js";
import {
  type ApprovalSubject,
  pendingApproval,
  refusedClickReason,
  refuseUnoffered,
  threadGrant,
} from "./approval-records.js";
import { approvalAudit } from "./audit-row.js";
import type { ApprovalCard } from "./card.js";
import type { ApprovalChannel, ApprovalOutcome } from "./channel.js";

/** What a borrower's waiting call learns. `unavailable`: the owner could not be asked at all. */
export type WaitOutcome =
  | { kind: "allowed_thread" | "allowed_once"; approval: Approval }
  | { kind: "denied" | "expired" | "unavailable" | "cancelled" | "interrupted" };

/** The result of a click, for the channel to answer the clicker. `not_offered`: an Allow on a Deny-only card. */
export type ClickResult = "applied" | "not_owner" | "expired" | "already_decided" | "unknown" | "not_offered";

/** Whether a user may see a pending card's arguments in full: only its owner, only while it waits. */
export type CardView =
  | { kind: "ok"; approval: Approval; card: ApprovalCard }
  | { kind: "not_owner" | "unknown" | "not_pending" };

/**
 * Asks owners, waits (bounded) for their decision, and applies clicks: each approval is decided
 * at most once, only by its owner, before it expires, and consumed at most once for its exact hash.
 */
export class ApprovalService {
  private readonly waiting = new Map<string, (a: Approval | "interrupted") => void>();
  private closed = false;
  /** Card deliveries in flight, so a shutdown can settle a card only once it exists. */
  private readonly asking = new Map<string, Promise<unknown>>();
  /** The card of each approval a call is waiting on (as many as `waiting`), for the full-arguments view. */
  private readonly cards = new Map<string, ApprovalCard>();
  /** Decisions this process is writing itself: the cross-process check leaves them to `decide`. */
  private readonly decidingHere = new Map<string, number>();

  constructor(
    /** `signals`: where a committed decision is announced, so the replica whose call waits on it resumes at once. */
    private readonly deps: {
      store: Store;
      channel: ApprovalChannel;
      clock: Clock;
      log: Logger;
      timeoutMs: number;
      metrics?: Pick<Metrics, "approvalDecided">;
      signals?: Pick<ClusterSignals, "publish">;
    },
  ) {}

  /** Approvals this process is waiting on (a borrower's call is held for each). */
  get pendingCount(): number {
    return this.waiting.size;
  }

  get available(): boolean {
    return this.deps.channel.available;
  }

  /** Creates the approval, asks the owner, and waits for a decision, the timeout, or `signal`. */
  async requestAndWait(
    subject: ApprovalSubject,
    card: Omit<ApprovalCard, "expiresAt">,
    signal?: AbortSignal,
  ): Promise<WaitOutcome> {
    if (!this.deps.channel.available || this.closed) return { kind: "unavailable" };
    const now = this.deps.clock.now();
    const approval = pendingApproval(subject, now, this.deps.timeoutMs);
    await this.deps.store.approvals.create(approval, [approvalAudit(approval, "approval_requested", null, now)]);
    const decided = new Promise<Approval | "timeout" | "cancelled" | "interrupted">((resolve) => {
      // Armed on the injected clock for the approval's own expiry: tests advance time to expire it.
      const timer = this.deps.clock.setTimeout(() => finish("timeout"), approval.expiresAt - this.deps.clock.now());
      const onAbort = () => finish("cancelled");
      const finish = (v: Approval | "timeout" | "cancelled" | "interrupted") => {
        timer.cancel();
        signal?.removeEventListener("abort", onAbort);
        this.waiting.delete(approval.id);
        this.cards.delete(approval.id);
        resolve(v);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.waiting.set(approval.id, (a) => finish(a));
    });
    const fullCard: ApprovalCard = { ...card, expiresAt: approval.expiresAt };
    this.cards.set(approval.id, fullCard);
    const delivery = this.deps.channel.ask(approval, fullCard);
    this.asking.set(
      approval.id,
      delivery.catch(() => {}),
    );
    try {
      await delivery;
    } catch (err) {
      this.deps.log.warn("approval could not be delivered", { approvalId: approval.id, error: errorMessage(err) });
      this.waiting.get(approval.id)?.({ ...approval, status: "expired" });
      await this.expire(approval);
      return { kind: "unavailable" };
    } finally {
      this.asking.delete(approval.id);
    }
    const result = await decided;
    if (result === "interrupted") return { kind: "interrupted" };
    if (result === "timeout" || result === "cancelled") {
      await this.expire(approval);
      return { kind: result === "timeout" ? "expired" : "cancelled" };
    }
    if (result.status === "allowed_thread" || result.status === "allowed_once")
      return { kind: result.status, approval: result };
    return { kind: result.status === "denied" ? "denied" : "expired" };
  }

  private async expire(approval: Approval): Promise<void> {
    const now = this.deps.clock.now();
    if (
      await this.deps.store.approvals.expire(approval.id, now, [
        approvalAudit(approval, "approval_decided", "expired", now),
      ])
    ) {
      this.deps.metrics?.approvalDecided("expired", (now - approval.createdAt) / 1000);
      await this.safeSettled({ ...approval, status: "expired" }, "expired");
    }
  }

  private async safeSettled(a: Approval, outcome: ApprovalOutcome): Promise<void> {
    try {
      await this.deps.channel.settled(a, outcome);
    } catch (err) {
      this.deps.log.warn("approval card update failed", { approvalId: a.id, error: errorMessage(err) });
    }
  }

  /**
   * Applies a click on an approval card. Only the owner's click on a pending, unexpired approval
   * changes anything; every other click is audited and ignored. `sameTenant`, when given, says
   * whether the click came through the installation serving the approval's team (a user id in
   * another tenant is someone else): a click from elsewhere is refused as not the owner's.
   */
  async decide(
    approvalId: string,
    nonce: string,
    clicker: string,
    decision: "allowed_thread" | "allowed_once" | "denied",
    sameTenant?: (teamId: string) => Promise<boolean>,
  ): Promise<ClickResult> {
    const now = this.deps.clock.now();
    const a = await this.deps.store.approvals.get(approvalId);
    if (!a || a.nonce !== nonce) {
      await this.deps.store.audit.append([
        { at: now, event: "approval_rejected_click", approverUserId: clicker, decision: "unknown", actor: clicker },
      ]);
      return "unknown";
    }
    if (sameTenant && !(await sameTenant(a.teamId))) {
      await this.deps.store.audit.append([approvalAudit(a, "approval_rejected_click", "wrong_tenant", now, clicker)]);
      return "not_owner";
    }
    const card = this.cards.get(a.id);
    if (
      card &&
      decision !== "denied" &&
      !card.decisions.includes(decision) &&
      clicker === a.ownerUserId &&
      a.status === "pending"
    ) {
      // Defence in depth: the card showed no such button (its arguments could not all be shown exactly).
      await this.deps.store.audit.append([approvalAudit(a, "approval_rejected_click", "not_offered", now, clicker)]);
      return "not_offered";
    }
    const grant = decision === "allowed_thread" ? threadGrant(a, now) : undefined;
    const audit = [approvalAudit(a, "approval_decided", decision, now, clicker)];
    if (grant) audit.push({ ...approvalAudit(a, "grant_created", "allowed_thread", now, clicker) });
    this.decidingHere.set(approvalId, (this.decidingHere.get(approvalId) ?? 0) + 1);
    let applied: boolean;
    try {
      applied = await this.deps.store.approvals.decide(
        approvalId,
        { status: decision, by: clicker, at: now, ...(grant ? { grant } : {}) },
        audit,
      );
    } finally {
      // Released once the waiter is answered (the line after the write, with no await between).
      queueMicrotask(() => this.doneDeciding(approvalId));
    }
    if (!applied) {
      // Read again: a click racing this one (another replica, a double click) may have decided it meanwhile.
      const b = (await this.deps.store.approvals.get(approvalId)) ?? a;
      const why = refusedClickReason(a, b, clicker, now);
      await this.deps.store.audit.append([approvalAudit(a, "approval_rejected_click", why, now, clicker)]);
      // The winning click may have landed on another replica while this one ran: its signal was skipped here.
      await this.collectDecisions(approvalId);
      return why;
    }
    const decided: Approval = { ...a, status: decision, decidedAt: now, decidedBy: clicker };
    this.deps.metrics?.approvalDecided(decision, (now - a.createdAt) / 1000);
    this.waiting.get(a.id)?.(decided);
    await this.deps.signals?.publish("approval_decided", { approvalId: a.id });
    await this.safeSettled(decided, decision);
    return "applied";
  }

  /**
   * Answers calls waiting here whose approval another process decided (`slaude-connect approvals
   * decide` writes the store only). Run periodically while calls wait, and for `only` (one approval) when
   * a replica signals its decision; returns how many it answered.
   * A decision the card here did not offer is applied as a denial and its grant revoked (fail closed).
   */
  async collectDecisions(only?: string): Promise<number> {
    let answered = 0;
    for (const id of only === undefined ? [...this.waiting.keys()] : this.waiting.has(only) ? [only] : []) {
      if (this.decidingHere.has(id)) continue;
      const a = await this.deps.store.approvals.get(id);
      const waiter = this.waiting.get(id);
      if (!a || !waiter || this.decidingHere.has(id) || a.status === "pending") continue;
      if (a.status !== "allowed_thread" && a.status !== "allowed_once" && a.status !== "denied") continue;
      const card = this.cards.get(id);
      if (a.status !== "denied" && card && !card.decisions.includes(a.status)) {
        this.waiting.delete(id); // taken before the await: the poll and a signal may collect at once
        await refuseUnoffered(this.deps.store, a, this.deps.clock.now());
        waiter({ ...a, status: "denied" });
        await this.safeSettled({ ...a, status: "denied" }, "denied");
      } else {
        this.deps.metrics?.approvalDecided(a.status, ((a.decidedAt ?? this.deps.clock.now()) - a.createdAt) / 1000);
        waiter(a);
        await this.safeSettled(a, a.status);
      }
      answered++;
    }
    return answered;
  }

  private doneDeciding(id: string): void {
    const n = (this.decidingHere.get(id) ?? 1) - 1;
    if (n > 0) this.decidingHere.set(id, n);
    else this.decidingHere.delete(id);
  }

  /** The card of a pending approval, for its owner only (the View all arguments modal). */
  async viewCard(approvalId: string, nonce: string, viewer: string): Promise<CardView> {
    const a = await this.deps.store.approvals.get(approvalId);
    if (!a || a.nonce !== nonce) return { kind: "unknown" };
    if (viewer !== a.ownerUserId) return { kind: "not_owner" };
    const card = this.cards.get(a.id);
    if (!card || a.status !== "pending" || a.expiresAt <= this.deps.clock.now()) return { kind: "not_pending" };
    return { kind: "ok", approval: a, card };
  }

  /** Consumes an allowed approval for exactly `argsHash`: true once, false ever after. */
  async consume(approval: Approval, argsHash: string): Promise<boolean> {
    const now = this.deps.clock.now();
    return this.deps.store.approvals.consume(approval.id, argsHash, now, [
      approvalAudit(approval, "approval_decided", "consumed", now),
    ]);
  }

  /**
   * Graceful shutdown: every waiting call is answered "interrupted", its approval expired and its
   * card marked expired, so nothing stays pending and no click can apply to a call that is gone.
   */
  async shutdown(): Promise<void> {
    this.closed = true;
    const ids = [...this.waiting.keys()];
    for (const id of ids) {
      this.waiting.get(id)?.("interrupted");
      await this.asking.get(id);
      const a = await this.deps.store.approvals.get(id);
      if (a) await this.expire(a);
    }
  }

  /**
   * Expires pending approvals past their expiry, whichever process asked: a replica that died leaves its
   * callers' approvals pending, and this (the leader's approval-expiry job) marks them and their cards expired.
   */
  async expireDue(): Promise<number> {
    const now = this.deps.clock.now();
    const expired = await this.deps.store.approvals.expirePending(now);
    for (const a of expired) {
      this.deps.metrics?.approvalDecided("expired", (now - a.createdAt) / 1000);
      await this.safeSettled(a, "expired");
    }
    return expired.length;
  }

  /** Expires approvals left pending by a previous process (their callers are gone). */
  async expireAbandoned(): Promise<number> {
    const expired = await this.deps.store.approvals.expirePending(this.deps.clock.now(), true);
    for (const a of expired) await this.safeSettled(a, "expired");
    return expired.length;
  }
}
