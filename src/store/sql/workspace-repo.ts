import type { Card } from "../../domain/card.js";
import type { ThreadRef } from "../../domain/thread.js";
import type { InboxRecord, WorkspaceChannelRecord, WorkspaceUserRecord } from "../records.js";
import type { WorkspaceRepo, WorkspaceSeed, WorkspaceThreadRecord } from "../workspace-repo.js";
import type { SqlDriver } from "./driver.js";
import * as ops from "./workspace.js";

/** The local workspace's repository on either adapter's driver (statements in workspace.ts). */
export class SqlWorkspaceRepo implements WorkspaceRepo {
  constructor(protected readonly driver: SqlDriver) {}

  seed(seed: WorkspaceSeed, at: number): Promise<boolean> {
    return this.driver.write(ops.seedWorkspace(seed, at));
  }
  users(teamId: string): Promise<WorkspaceUserRecord[]> {
    return this.driver.read(ops.workspaceUsers(teamId, this.driver.dialect));
  }
  channels(teamId: string): Promise<WorkspaceChannelRecord[]> {
    return this.driver.read(ops.workspaceChannels(teamId, this.driver.dialect));
  }
  isMember(teamId: string, channelId: string, userId: string): Promise<boolean> {
    return this.driver.read(ops.isWorkspaceMember(teamId, channelId, userId));
  }
  setMember(teamId: string, channelId: string, userId: string, member: boolean, at: number): Promise<boolean> {
    return this.driver.write(ops.setWorkspaceMember(teamId, channelId, userId, member, at));
  }
  async addThread(t: WorkspaceThreadRecord, maxPerTeam: number): Promise<void> {
    await this.driver.write(ops.addWorkspaceThread(t, maxPerTeam, this.driver.dialect));
  }
  threads(teamId: string, channelId: string, limit: number): Promise<WorkspaceThreadRecord[]> {
    return this.driver.read(ops.workspaceThreads(teamId, channelId, limit, this.driver.dialect));
  }
  async addNote(
    thread: ThreadRef,
    text: string,
    at: number,
    limits: { maxPerThread: number; maxThreads: number },
  ): Promise<void> {
    await this.driver.write(ops.addWorkspaceNote(thread, text, at, limits, this.driver.dialect));
  }
  notes(thread: ThreadRef, limit: number): Promise<{ text: string; at: number }[]> {
    return this.driver.read(ops.workspaceNotes(thread, limit));
  }
  async putInbox(item: InboxRecord, maxPerUser: number): Promise<void> {
    await this.driver.write(ops.putInboxItem(item, maxPerUser, this.driver.dialect));
  }
  getInbox(id: string): Promise<InboxRecord | undefined> {
    return this.driver.read(ops.inboxItemBy("id", id, this.driver.dialect));
  }
  inboxByApproval(approvalId: string): Promise<InboxRecord | undefined> {
    return this.driver.read(ops.inboxItemBy("approval_id", approvalId, this.driver.dialect));
  }
  updateInbox(id: string, card: Card, state: "open" | "settled"): Promise<InboxRecord | undefined> {
    return this.driver.write(ops.updateInboxItem(id, card, state, this.driver.dialect));
  }
  inbox(teamId: string, userId: string, limit: number): Promise<InboxRecord[]> {
    return this.driver.read(ops.inboxItems(teamId, userId, limit, this.driver.dialect));
  }
}
