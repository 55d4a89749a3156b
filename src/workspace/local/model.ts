import type { ClickResult } from "../../approvals/approval-service.js";
import type { Card } from "../../domain/card.js";
import type { ThreadRef } from "../../domain/thread.js";

// The local workspace's public shape: what the console (src/console) and the CLI read and do.
// State lives in the store (migrations/0005_local_workspace.sql); this is only the port.

/** The local team's id: every local thread, connection and audit row carries it. */
export const LOCAL_TEAM_ID = "T_LOCAL";

/** A person in the local workspace. `admin`: may revoke anyone's connection (as SLAUDE_ADMINS do). */
export interface WorkspaceUser {
  readonly id: string;
  readonly name: string;
  readonly admin: boolean;
}

/** A channel and its current members (user ids). */
export interface WorkspaceChannel {
  readonly id: string;
  readonly name: string;
  readonly members: readonly string[];
}

/** A card in one user's inbox: `open` while it can be answered, `settled` once it cannot. */
export interface InboxItem {
  readonly id: string;
  readonly userId: string;
  readonly at: number;
  readonly card: Card;
  /** The approval an approval card answers (decide with it). */
  readonly approvalId?: string;
  readonly state: "open" | "settled";
}

/** A thread of a local channel. */
export interface WorkspaceThread {
  readonly thread: ThreadRef;
  readonly startedBy: string;
  readonly at: number;
}

/** A note posted in a thread (e.g. "asked Alice"), as the Slack adapter posts it in the thread. */
export interface ThreadNote {
  readonly thread: ThreadRef;
  readonly text: string;
  readonly at: number;
}

/** Something changed: push it to whoever watches (the console's Server-Sent Events). */
export type WorkspaceEvent =
  | { readonly type: "inbox"; readonly userId: string; readonly item: InboxItem }
  | { readonly type: "workspace" }
  | { readonly type: "thread"; readonly thread: ThreadRef; readonly text: string; readonly at: number };

/** Why a local action was refused (expected outcomes, as values). */
export type LocalRefusal = "unknown_user" | "unknown_channel" | "not_member" | "too_many_threads" | "unknown_item";

/** The local workspace: people, channels, threads and inboxes kept in the store. */
export interface LocalWorkspace {
  readonly teamId: string;
  users(): Promise<WorkspaceUser[]>;
  channels(): Promise<WorkspaceChannel[]>;
  /** Adds or removes a member; the next call sees it (membership is read from the store each time). */
  setMember(channelId: string, userId: string, member: boolean): Promise<void>;
  /** Starts a thread in a channel the user is a member of. Throws LocalWorkspaceError otherwise. */
  startThread(channelId: string, userId: string): Promise<ThreadRef>;
  /** The channel's threads, newest first (bounded). */
  threads(channelId: string): Promise<WorkspaceThread[]>;
  /** Notes posted in a thread, oldest first (bounded). */
  notes(thread: ThreadRef): Promise<ThreadNote[]>;
  /** The user's inbox, newest first (bounded per user). */
  inbox(userId: string): Promise<InboxItem[]>;
  /** Answers an approval card as `asUserId`, through ApprovalService.decide: audited like a Slack click. */
  decide(
    approvalId: string,
    decision: "allowed_thread" | "allowed_once" | "denied",
    asUserId: string,
  ): Promise<ClickResult>;
  /** A consent card's Continue: mints a one-time login link for the card's user only; the card then carries it. */
  continueConsent(
    itemId: string,
    asUserId: string,
  ): Promise<{ url: string } | { refused: "not_yours" | "unknown_item" | "unavailable" }>;
  /** Watches every change; returns the unsubscribe function. At most a bounded number of listeners. */
  subscribe(listener: (e: WorkspaceEvent) => void): () => void;
}

/**
 * The demo team seeded on first start. User ids are Slack-shaped (`U` + capitals/digits, no
 * underscore) because POST /v1/turns and the MCP tools validate user ids as Slack ids.
 */
export const DEMO_TEAM = {
  users: [
    { id: "UALICE", name: "Alice", admin: false },
    { id: "UBOB", name: "Bob", admin: false },
    { id: "UCAROL", name: "Carol", admin: true },
  ],
  channels: [{ id: "C_GENERAL", name: "general", members: ["UALICE", "UBOB", "UCAROL"] }],
} as const satisfies { users: readonly WorkspaceUser[]; channels: readonly WorkspaceChannel[] };
