import type { ThreadRef } from "../domain/thread.js";

// What the console needs from the local workspace (src/workspace/local implements it). Cards are
// passed to the page exactly as the workspace stored them: the page renders the card model's
// JSON and never decides what a card says.

/** A person of the local workspace. */
export interface ConsoleUser {
  readonly id: string;
  readonly name: string;
  readonly admin: boolean;
}

/** A channel and its members. */
export interface ConsoleChannel {
  readonly id: string;
  readonly name: string;
  readonly members: readonly string[];
}

/** One card in a user's inbox (the card itself is the shared card model's JSON). */
export interface ConsoleInboxItem {
  readonly id: string;
  readonly userId: string;
  readonly at: number;
  readonly card: unknown;
  readonly approvalId?: string;
  readonly state: "open" | "settled";
}

/** A change the page shows live. */
export type ConsoleWorkspaceEvent =
  | { readonly type: "inbox"; readonly userId: string; readonly item: ConsoleInboxItem }
  | { readonly type: "workspace" }
  | { readonly type: "thread"; readonly thread: ThreadRef; readonly text: string; readonly at: number };

/** The result of an owner's click on an approval card. */
export type ConsoleClickResult = "applied" | "not_owner" | "expired" | "already_decided" | "unknown" | "not_offered";

/** The local workspace as the console uses it. */
export interface ConsoleWorkspace {
  readonly teamId: string;
  users(): Promise<readonly ConsoleUser[]>;
  channels(): Promise<readonly ConsoleChannel[]>;
  setMember(channelId: string, userId: string, member: boolean): Promise<void>;
  startThread(channelId: string, userId: string): Promise<ThreadRef>;
  threads(channelId: string): Promise<readonly { readonly thread: ThreadRef; readonly startedBy: string; readonly at: number }[]>;
  notes(thread: ThreadRef): Promise<readonly { readonly thread: ThreadRef; readonly text: string; readonly at: number }[]>;
  inbox(userId: string): Promise<readonly ConsoleInboxItem[]>;
  decide(approvalId: string, decision: "allowed_thread" | "allowed_once" | "denied", asUserId: string): Promise<ConsoleClickResult>;
  continueConsent(itemId: string, asUserId: string): Promise<{ url: string } | { refused: "not_yours" | "unknown_item" | "unavailable" }>;
  subscribe(listener: (e: ConsoleWorkspaceEvent) => void): () => void;
}

/** Who is an admin (the workspace's admin directory). */
export interface ConsoleAdmins {
  isAdmin(userId: string): Promise<boolean>;
}
