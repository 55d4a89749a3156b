import type { Card } from "../../domain/card.js";
import type { ThreadRef } from "../../domain/thread.js";
import type { InboxRecord, WorkspaceChannelRecord, WorkspaceUserRecord } from "../records.js";
import { SQLITE as D } from "../sql/dialect.js";
import type { Program } from "../sql/program.js";
import * as ops from "../sql/workspace.js";
import type { WorkspaceRepo, WorkspaceSeed, WorkspaceThreadRecord } from "../store.js";
import { type Db, DEFAULT_LOCK_WAIT, type LockWait, writeTx } from "./db.js";
import { SqliteRunner } from "./sqlite-program.js";

/** SQLite state of the local workspace: the shared statements of src/store/sql/workspace.ts. */
export class SqliteWorkspaceRepo implements WorkspaceRepo {
  private readonly runner: SqliteRunner;

  constructor(
    private readonly db: Db,
    private readonly wait: LockWait = DEFAULT_LOCK_WAIT,
  ) {
    this.runner = new SqliteRunner(db);
  }

  private write<T>(p: Program<T>): Promise<T> {
    return writeTx(this.db, () => this.runner.run(p), this.wait);
  }

  private async read<T>(p: Program<T>): Promise<T> {
    return this.runner.run(p);
  }

  seed(seed: WorkspaceSeed, at: number): Promise<boolean> {
    return this.write(ops.seedWorkspace(seed, at));
  }
  users(teamId: string): Promise<WorkspaceUserRecord[]> {
    return this.read(ops.workspaceUsers(teamId, D));
  }
  channels(teamId: string): Promise<WorkspaceChannelRecord[]> {
    return this.read(ops.workspaceChannels(teamId, D));
  }
  isMember(teamId: string, channelId: string, userId: string): Promise<boolean> {
    return this.read(ops.isWorkspaceMember(teamId, channelId, userId));
  }
  setMember(teamId: string, channelId: string, userId: string, member: boolean, at: number): Promise<boolean> {
    return this.write(ops.setWorkspaceMember(teamId, channelId, userId, member, at));
  }
  async addThread(t: WorkspaceThreadRecord, maxPerTeam: number): Promise<void> {
    await this.write(ops.addWorkspaceThread(t, maxPerTeam, D));
  }
  threads(teamId: string, channelId: string, limit: number): Promise<WorkspaceThreadRecord[]> {
    return this.read(ops.workspaceThreads(teamId, channelId, limit, D));
  }
  async addNote(
    thread: ThreadRef,
    text: string,
    at: number,
    limits: { maxPerThread: number; maxThreads: number },
  ): Promise<void> {
    await this.write(ops.addWorkspaceNote(thread, text, at, limits, D));
  }
  notes(thread: ThreadRef, limit: number): Promise<{ text: string; at: number }[]> {
    return this.read(ops.workspaceNotes(thread, limit));
  }
  async putInbox(item: InboxRecord, maxPerUser: number): Promise<void> {
    await this.write(ops.putInboxItem(item, maxPerUser, D));
  }
  getInbox(id: string): Promise<InboxRecord | undefined> {
    return this.read(ops.inboxItemBy("id", id, D));
  }
  inboxByApproval(approvalId: string): Promise<InboxRecord | undefined> {
    return this.read(ops.inboxItemBy("approval_id", approvalId, D));
  }
  updateInbox(id: string, card: Card, state: "open" | "settled"): Promise<InboxRecord | undefined> {
    return this.write(ops.updateInboxItem(id, card, state, D));
  }
  inbox(teamId: string, userId: string, limit: number): Promise<InboxRecord[]> {
    return this.read(ops.inboxItems(teamId, userId, limit, D));
  }
}
