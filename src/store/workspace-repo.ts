import type { Card } from "../domain/card.js";
import type { ThreadRef } from "../domain/thread.js";
import type { InboxRecord, WorkspaceChannelRecord, WorkspaceUserRecord } from "./records.js";

// The local workspace's part of the storage port (src/store/store.ts, development only): its
// people, channels, threads, notes and inboxes, as both adapters keep them.

/** What the local workspace starts with (the demo team). */
export interface WorkspaceSeed {
  readonly teamId: string;
  readonly users: readonly WorkspaceUserRecord[];
  readonly channels: readonly WorkspaceChannelRecord[];
}

/** A thread of the local workspace. */
export interface WorkspaceThreadRecord {
  readonly thread: ThreadRef;
  readonly startedBy: string;
  readonly at: number;
}

/**
 * The local workspace's state (development only): people, channels, members, threads, notes and
 * inboxes. Every list that can grow is capped by the caller's limit, oldest pruned first.
 */
export interface WorkspaceRepo {
  /** Seeds the team in one transaction when it has no users yet; true when it did (so a restart never re-adds removed members). */
  seed(seed: WorkspaceSeed, at: number): Promise<boolean>;
  users(teamId: string): Promise<WorkspaceUserRecord[]>;
  channels(teamId: string): Promise<WorkspaceChannelRecord[]>;
  /** Read from the table on every call: a change is seen by the next call. */
  isMember(teamId: string, channelId: string, userId: string): Promise<boolean>;
  /** Adds or removes a member; false when the channel or the user does not exist. */
  setMember(teamId: string, channelId: string, userId: string, member: boolean, at: number): Promise<boolean>;
  /** Records a thread (idempotent), keeping at most `maxPerTeam` (oldest dropped with their notes). */
  addThread(t: WorkspaceThreadRecord, maxPerTeam: number): Promise<void>;
  threads(teamId: string, channelId: string, limit: number): Promise<WorkspaceThreadRecord[]>;
  /** Adds a note to a thread (recording the thread if needed), keeping at most `maxPerThread`. */
  addNote(
    thread: ThreadRef,
    text: string,
    at: number,
    limits: { maxPerThread: number; maxThreads: number },
  ): Promise<void>;
  notes(thread: ThreadRef, limit: number): Promise<{ text: string; at: number }[]>;
  /** Adds an inbox card, keeping at most `maxPerUser` for that user (settled ones dropped first, then the oldest). */
  putInbox(item: InboxRecord, maxPerUser: number): Promise<void>;
  getInbox(id: string): Promise<InboxRecord | undefined>;
  /** The open or settled card of an approval. */
  inboxByApproval(approvalId: string): Promise<InboxRecord | undefined>;
  /** Replaces an inbox card (and its state); undefined when it is gone. */
  updateInbox(id: string, card: Card, state: "open" | "settled"): Promise<InboxRecord | undefined>;
  /** A user's cards, newest first. */
  inbox(teamId: string, userId: string, limit: number): Promise<InboxRecord[]>;
}
