import type { ApprovalService, ClickResult } from "../../approvals/approval-service.js";
import type { Clock } from "../../clock/clock.js";
import type { AdminEntry } from "../../config/env.js";
import type { ServiceRegistry } from "../../config/registry.js";
import { type Card, type CardLine, plainLine } from "../../domain/card.js";
import { errorMessage } from "../../domain/errors.js";
import { newId } from "../../domain/ids.js";
import type { ThreadRef } from "../../domain/thread.js";
import { listedAdmin } from "../../installations/admin-entries.js";
import type { Logger } from "../../log/logger.js";
import type { ConsentSubject, InboxRecord } from "../../store/records.js";
import type { Store } from "../../store/store.js";
import { type ConsentContinuation, continueConsent, type LinkMinter } from "./consent-continue.js";
import { LocalWorkspaceError } from "./errors.js";
import {
  DEMO_TEAM,
  type InboxItem,
  LOCAL_TEAM_ID,
  type LocalWorkspace,
  type ThreadNote,
  type WorkspaceChannel,
  type WorkspaceEvent,
  type WorkspaceThread,
  type WorkspaceUser,
} from "./model.js";

/** Caps of everything the local workspace keeps, so nothing grows without bound. */
export interface LocalWorkspaceLimits {
  /** Cards kept per user (settled ones pruned first). */
  readonly inboxPerUser: number;
  /** Threads kept for the team (oldest pruned, with their notes). */
  readonly threads: number;
  readonly notesPerThread: number;
  /** Watchers at once (the console's event streams). */
  readonly listeners: number;
}

/** The defaults: generous for a laptop demo, small enough for memory and the database. */
export const LOCAL_LIMITS: LocalWorkspaceLimits = {
  inboxPerUser: 200,
  threads: 1_000,
  notesPerThread: 200,
  listeners: 32,
};

export type { LinkMinter } from "./consent-continue.js";

/**
 * The local workspace: people, channels, threads and inboxes in the store, changes pushed to
 * subscribers. The adapters in ./adapters.ts put cards here; the console and CLI read and answer them.
 */
export class LocalWorkspaceService implements LocalWorkspace {
  readonly teamId = LOCAL_TEAM_ID;
  private readonly listeners = new Set<(e: WorkspaceEvent) => void>();
  private readonly limits: LocalWorkspaceLimits;
  private approvals: Pick<ApprovalService, "decide"> | undefined;
  private logins: LinkMinter | undefined;
  private lastTs = 0;

  constructor(
    private readonly deps: {
      store: Store;
      clock: Clock;
      log: Logger;
      registry: ServiceRegistry;
      admins: readonly AdminEntry[];
      limits?: Partial<LocalWorkspaceLimits>;
    },
  ) {
    this.limits = { ...LOCAL_LIMITS, ...deps.limits };
  }

  /** The services built after the workspace (the broker's approvals, the login service). */
  bind(late: { approvals: Pick<ApprovalService, "decide">; logins?: LinkMinter }): void {
    this.approvals = late.approvals;
    this.logins = late.logins;
  }

  /** Whether a consent card can offer Continue (a login service is bound). */
  get loginAvailable(): boolean {
    return this.logins !== undefined;
  }

  /** Seeds the demo team on first start; true when it did (never again, so removed members stay removed). */
  seed(): Promise<boolean> {
    return this.deps.store.workspace.seed(
      { teamId: this.teamId, users: DEMO_TEAM.users, channels: DEMO_TEAM.channels },
      this.deps.clock.now(),
    );
  }

  users(): Promise<WorkspaceUser[]> {
    return this.deps.store.workspace.users(this.teamId);
  }

  channels(): Promise<WorkspaceChannel[]> {
    return this.deps.store.workspace.channels(this.teamId);
  }

  /** Whether the user is an admin of the local team: in SLAUDE_ADMINS (bare or `T_LOCAL:` entries) or marked admin in the workspace. */
  async isAdmin(teamId: string, userId: string): Promise<boolean> {
    if (teamId !== this.teamId) return false;
    if (listedAdmin(this.deps.admins, teamId, userId, true)) return true;
    return (await this.users()).some((u) => u.id === userId && u.admin);
  }

  async setMember(channelId: string, userId: string, member: boolean): Promise<void> {
    if (!(await this.deps.store.workspace.setMember(this.teamId, channelId, userId, member, this.deps.clock.now()))) {
      throw new LocalWorkspaceError(
        "unknown_channel",
        `no channel ${channelId} with a user ${userId} in the local workspace`,
      );
    }
    this.deps.log.info("local workspace membership changed", { channelId, userId, member });
    this.emit({ type: "workspace" });
  }

  /** A Slack-shaped, strictly increasing thread ts from the clock. */
  private nextTs(): string {
    const micros = Math.max(this.deps.clock.now() * 1000, this.lastTs + 1);
    this.lastTs = micros;
    return `${Math.floor(micros / 1_000_000)}.${String(micros % 1_000_000).padStart(6, "0")}`;
  }

  async startThread(channelId: string, userId: string): Promise<ThreadRef> {
    const channel = (await this.channels()).find((c) => c.id === channelId);
    if (!channel) throw new LocalWorkspaceError("unknown_channel", `no channel ${channelId} in the local workspace`);
    if (!channel.members.includes(userId))
      throw new LocalWorkspaceError("not_member", `${userId} is not a member of #${channel.name}`);
    const thread: ThreadRef = { teamId: this.teamId, channelId, threadTs: this.nextTs() };
    await this.deps.store.workspace.addThread(
      { thread, startedBy: userId, at: this.deps.clock.now() },
      this.limits.threads,
    );
    this.emit({ type: "workspace" });
    return thread;
  }

  /**
   * A real thread the start-up block names, with a member who may call in it: the demo user's
   * (else the first member's) newest thread in the first channel with members, started when there
   * is none; undefined when no channel has a member.
   */
  async exampleThread(): Promise<{ thread: ThreadRef; user: WorkspaceUser; channel: WorkspaceChannel } | undefined> {
    const users = await this.users();
    const preferred = [...users].sort(
      (a, b) => Number(b.id === DEMO_TEAM.users[0].id) - Number(a.id === DEMO_TEAM.users[0].id),
    );
    for (const channel of await this.channels()) {
      const user = preferred.find((u) => channel.members.includes(u.id));
      if (!user) continue;
      const existing = (await this.threads(channel.id)).find((t) => t.startedBy === user.id);
      return { thread: existing?.thread ?? (await this.startThread(channel.id, user.id)), user, channel };
    }
    return undefined;
  }

  threads(channelId: string): Promise<WorkspaceThread[]> {
    return this.deps.store.workspace.threads(this.teamId, channelId, this.limits.threads);
  }

  async notes(thread: ThreadRef): Promise<ThreadNote[]> {
    return (await this.deps.store.workspace.notes(thread, this.limits.notesPerThread)).map((n) => ({
      thread,
      text: n.text,
      at: n.at,
    }));
  }

  async inbox(userId: string): Promise<InboxItem[]> {
    return (await this.deps.store.workspace.inbox(this.teamId, userId, this.limits.inboxPerUser)).map(toItem);
  }

  async decide(
    approvalId: string,
    decision: "allowed_thread" | "allowed_once" | "denied",
    asUserId: string,
  ): Promise<ClickResult> {
    if (!this.approvals) throw new Error("local workspace used before the broker was bound");
    // The nonce is the card's own: whoever sees this inbox holds the card, as a Slack click would.
    // ApprovalService.decide applies only the owner's answer and audits every other click.
    const a = await this.deps.store.approvals.get(approvalId);
    return this.approvals.decide(approvalId, a?.nonce ?? "", asUserId, decision);
  }

  /** Continue on a consent card: a one-time login link for its user (./consent-continue.ts). */
  continueConsent(itemId: string, asUserId: string): Promise<ConsentContinuation> {
    return continueConsent(
      {
        ...this.deps,
        teamId: this.teamId,
        logins: this.logins,
        replaceCard: (id, card) => this.update(id, card, "open"),
      },
      itemId,
      asUserId,
    );
  }

  subscribe(listener: (e: WorkspaceEvent) => void): () => void {
    if (this.listeners.size >= this.limits.listeners)
      throw new LocalWorkspaceError("too_many_listeners", `at most ${this.limits.listeners} watchers at once`);
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Watchers subscribed now. */
  get listenerCount(): number {
    return this.listeners.size;
  }

  /** Puts a card in a user's inbox; throws when the user is not in the workspace (the caller fails closed). */
  async deliver(
    userId: string,
    card: Card,
    extra: { approvalId?: string; subject?: ConsentSubject } = {},
  ): Promise<InboxItem> {
    if (!(await this.users()).some((u) => u.id === userId))
      throw new LocalWorkspaceError("unknown_user", `no user ${userId} in the local workspace`);
    const record: InboxRecord = {
      id: newId("card"),
      teamId: this.teamId,
      userId,
      at: this.deps.clock.now(),
      card,
      approvalId: extra.approvalId ?? null,
      subject: extra.subject ?? null,
      state: card.actions.length ? "open" : "settled",
    };
    await this.deps.store.workspace.putInbox(record, this.limits.inboxPerUser);
    const item = toItem(record);
    this.emit({ type: "inbox", userId, item });
    return item;
  }

  /** Replaces the card of an approval (its settled form); a no-op when the card was pruned. */
  async settleApproval(approvalId: string, card: Card): Promise<void> {
    const item = await this.deps.store.workspace.inboxByApproval(approvalId);
    if (item) await this.update(item.id, card, "settled");
  }

  /** Settles the user's open consent cards of a service once a sign-in connected it (their links are used). */
  async settleConsent(userId: string, service: string, card: Card): Promise<void> {
    for (const r of await this.deps.store.workspace.inbox(this.teamId, userId, this.limits.inboxPerUser)) {
      if (r.state === "open" && r.card.kind === "consent" && r.subject?.service === service)
        await this.update(r.id, card, "settled");
    }
  }

  private async update(id: string, card: Card, state: "open" | "settled"): Promise<void> {
    const updated = await this.deps.store.workspace.updateInbox(id, card, state);
    if (updated) this.emit({ type: "inbox", userId: updated.userId, item: toItem(updated) });
  }

  /** Posts a note in a thread, people written by name (as the thread would show them). */
  async note(thread: ThreadRef, line: CardLine): Promise<void> {
    const names = new Map((await this.users()).map((u) => [u.id, u.name]));
    const text = plainLine(line, (id) => names.get(id) ?? id);
    const at = this.deps.clock.now();
    await this.deps.store.workspace.addNote(thread, text, at, {
      maxPerThread: this.limits.notesPerThread,
      maxThreads: this.limits.threads,
    });
    this.emit({ type: "thread", thread, text, at });
  }

  private emit(e: WorkspaceEvent): void {
    for (const l of [...this.listeners]) {
      try {
        l(e);
      } catch (err) {
        // One broken watcher must not stop the others or the change itself.
        this.deps.log.warn("local workspace listener failed", { error: errorMessage(err) });
      }
    }
  }
}

function toItem(r: InboxRecord): InboxItem {
  return {
    id: r.id,
    userId: r.userId,
    at: r.at,
    card: r.card,
    ...(r.approvalId ? { approvalId: r.approvalId } : {}),
    state: r.state,
  };
}
