import { z } from "zod";
import type { Card } from "../../domain/card.js";
import { parseCard } from "../../domain/card-schema.js";
import type { ThreadRef } from "../../domain/thread.js";
import type { ConsentSubject, InboxRecord, WorkspaceChannelRecord, WorkspaceUserRecord } from "../records.js";
import type { WorkspaceRepo, WorkspaceSeed, WorkspaceThreadRecord } from "../workspace-repo.js";
import { type Db, DEFAULT_LOCK_WAIT, type LockWait, writeTx } from "./db.js";

export interface InboxRow {
  id: string;
  team_id: string;
  user_id: string;
  at: number;
  kind: string;
  card_json: string;
  approval_id: string | null;
  subject_json: string | null;
  state: string;
}

const subjectSchema = z
  .object({ service: z.string(), channelId: z.string().nullable(), threadTs: z.string().nullable() })
  .strict();

function parseSubject(json: string | null): ConsentSubject | null | undefined {
  if (json === null) return null;
  try {
    const r = subjectSchema.safeParse(JSON.parse(json));
    return r.success ? r.data : undefined;
  } catch {
    return undefined;
  }
}

/** A row as an inbox record; undefined when its JSON does not parse (such a row is never shown). */
export function toInbox(r: InboxRow): InboxRecord | undefined {
  const card = parseCard(r.card_json);
  const subject = parseSubject(r.subject_json);
  if (!card || subject === undefined || (r.state !== "open" && r.state !== "settled")) return undefined;
  return {
    id: r.id,
    teamId: r.team_id,
    userId: r.user_id,
    at: r.at,
    card,
    approvalId: r.approval_id,
    subject,
    state: r.state,
  };
}

/** SQLite state of the local workspace. */
export class SqliteWorkspaceRepo implements WorkspaceRepo {
  constructor(
    private readonly db: Db,
    private readonly wait: LockWait = DEFAULT_LOCK_WAIT,
  ) {}

  async seed(seed: WorkspaceSeed, at: number): Promise<boolean> {
    const db = this.db;
    return writeTx(
      db,
      () => {
        const any = db.prepare("SELECT 1 FROM workspace_users WHERE team_id = ? LIMIT 1").get(seed.teamId);
        if (any) return false;
        const user = db.prepare(
          "INSERT INTO workspace_users (team_id, id, name, admin, created_at) VALUES (?, ?, ?, ?, ?)",
        );
        const channel = db.prepare(
          "INSERT OR IGNORE INTO workspace_channels (team_id, id, name, created_at) VALUES (?, ?, ?, ?)",
        );
        const member = db.prepare(
          "INSERT OR IGNORE INTO workspace_members (team_id, channel_id, user_id, added_at) VALUES (?, ?, ?, ?)",
        );
        for (const u of seed.users) user.run(seed.teamId, u.id, u.name, u.admin ? 1 : 0, at);
        for (const c of seed.channels) {
          channel.run(seed.teamId, c.id, c.name, at);
          for (const m of c.members) member.run(seed.teamId, c.id, m, at);
        }
        return true;
      },
      this.wait,
    );
  }

  async users(teamId: string): Promise<WorkspaceUserRecord[]> {
    const rows = this.db
      .prepare("SELECT id, name, admin FROM workspace_users WHERE team_id = ? ORDER BY name, id")
      .all(teamId) as { id: string; name: string; admin: number }[];
    return rows.map((r) => ({ id: r.id, name: r.name, admin: r.admin === 1 }));
  }

  async channels(teamId: string): Promise<WorkspaceChannelRecord[]> {
    const chans = this.db
      .prepare("SELECT id, name FROM workspace_channels WHERE team_id = ? ORDER BY name, id")
      .all(teamId) as { id: string; name: string }[];
    const members = this.db
      .prepare("SELECT channel_id, user_id FROM workspace_members WHERE team_id = ? ORDER BY added_at, user_id")
      .all(teamId) as { channel_id: string; user_id: string }[];
    return chans.map((c) => ({
      id: c.id,
      name: c.name,
      members: members.filter((m) => m.channel_id === c.id).map((m) => m.user_id),
    }));
  }

  async isMember(teamId: string, channelId: string, userId: string): Promise<boolean> {
    return Boolean(
      this.db
        .prepare("SELECT 1 FROM workspace_members WHERE team_id = ? AND channel_id = ? AND user_id = ?")
        .get(teamId, channelId, userId),
    );
  }

  async setMember(teamId: string, channelId: string, userId: string, member: boolean, at: number): Promise<boolean> {
    const db = this.db;
    return writeTx(
      db,
      () => {
        const known =
          db.prepare("SELECT 1 FROM workspace_channels WHERE team_id = ? AND id = ?").get(teamId, channelId) &&
          db.prepare("SELECT 1 FROM workspace_users WHERE team_id = ? AND id = ?").get(teamId, userId);
        if (!known) return false;
        if (member)
          db.prepare(
            "INSERT OR IGNORE INTO workspace_members (team_id, channel_id, user_id, added_at) VALUES (?, ?, ?, ?)",
          ).run(teamId, channelId, userId, at);
        else
          db.prepare("DELETE FROM workspace_members WHERE team_id = ? AND channel_id = ? AND user_id = ?").run(
            teamId,
            channelId,
            userId,
          );
        return true;
      },
      this.wait,
    );
  }

  /** Inserts the thread if new and drops the team's oldest past the cap; inside a transaction. */
  private addThreadInTx(t: WorkspaceThreadRecord, maxPerTeam: number): void {
    const { teamId, channelId, threadTs } = t.thread;
    this.db
      .prepare(
        "INSERT OR IGNORE INTO workspace_threads (team_id, channel_id, thread_ts, started_by, created_at) VALUES (?, ?, ?, ?, ?)",
      )
      .run(teamId, channelId, threadTs, t.startedBy, t.at);
    // Notes go with their thread (ON DELETE CASCADE).
    this.db
      .prepare(
        `DELETE FROM workspace_threads WHERE rowid IN (
           SELECT rowid FROM workspace_threads WHERE team_id = ? ORDER BY created_at DESC, rowid DESC LIMIT -1 OFFSET ?)`,
      )
      .run(teamId, maxPerTeam);
  }

  async addThread(t: WorkspaceThreadRecord, maxPerTeam: number): Promise<void> {
    await writeTx(this.db, () => this.addThreadInTx(t, maxPerTeam), this.wait);
  }

  async threads(teamId: string, channelId: string, limit: number): Promise<WorkspaceThreadRecord[]> {
    const rows = this.db
      .prepare(
        "SELECT thread_ts, started_by, created_at FROM workspace_threads WHERE team_id = ? AND channel_id = ? ORDER BY created_at DESC, rowid DESC LIMIT ?",
      )
      .all(teamId, channelId, limit) as { thread_ts: string; started_by: string; created_at: number }[];
    return rows.map((r) => ({
      thread: { teamId, channelId, threadTs: r.thread_ts },
      startedBy: r.started_by,
      at: r.created_at,
    }));
  }

  async addNote(
    thread: ThreadRef,
    text: string,
    at: number,
    limits: { maxPerThread: number; maxThreads: number },
  ): Promise<void> {
    const db = this.db;
    await writeTx(
      db,
      () => {
        // A note may be about a thread the console never started (any host can name a thread).
        const channel = db
          .prepare("SELECT 1 FROM workspace_channels WHERE team_id = ? AND id = ?")
          .get(thread.teamId, thread.channelId);
        if (!channel) return;
        this.addThreadInTx({ thread, startedBy: "", at }, limits.maxThreads);
        db.prepare("INSERT INTO workspace_notes (team_id, channel_id, thread_ts, text, at) VALUES (?, ?, ?, ?, ?)").run(
          thread.teamId,
          thread.channelId,
          thread.threadTs,
          text,
          at,
        );
        db.prepare(
          `DELETE FROM workspace_notes WHERE id IN (
             SELECT id FROM workspace_notes WHERE team_id = ? AND channel_id = ? AND thread_ts = ? ORDER BY id DESC LIMIT -1 OFFSET ?)`,
        ).run(thread.teamId, thread.channelId, thread.threadTs, limits.maxPerThread);
      },
      this.wait,
    );
  }

  async notes(thread: ThreadRef, limit: number): Promise<{ text: string; at: number }[]> {
    const rows = this.db
      .prepare(
        "SELECT text, at FROM (SELECT id, text, at FROM workspace_notes WHERE team_id = ? AND channel_id = ? AND thread_ts = ? ORDER BY id DESC LIMIT ?) ORDER BY id",
      )
      .all(thread.teamId, thread.channelId, thread.threadTs, limit) as { text: string; at: number }[];
    return rows;
  }

  async putInbox(item: InboxRecord, maxPerUser: number): Promise<void> {
    const db = this.db;
    await writeTx(
      db,
      () => {
        db.prepare(
          "INSERT INTO workspace_inbox (id, team_id, user_id, at, kind, card_json, approval_id, subject_json, state) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        ).run(
          item.id,
          item.teamId,
          item.userId,
          item.at,
          item.card.kind,
          JSON.stringify(item.card),
          item.approvalId,
          item.subject ? JSON.stringify(item.subject) : null,
          item.state,
        );
        // Settled cards go first, then the oldest open ones.
        db.prepare(
          `DELETE FROM workspace_inbox WHERE id IN (
             SELECT id FROM workspace_inbox WHERE team_id = ? AND user_id = ? ORDER BY state = 'open' DESC, at DESC, rowid DESC LIMIT -1 OFFSET ?)`,
        ).run(item.teamId, item.userId, maxPerUser);
      },
      this.wait,
    );
  }

  async getInbox(id: string): Promise<InboxRecord | undefined> {
    const r = this.db.prepare("SELECT * FROM workspace_inbox WHERE id = ?").get(id) as InboxRow | undefined;
    return r ? toInbox(r) : undefined;
  }

  async inboxByApproval(approvalId: string): Promise<InboxRecord | undefined> {
    const r = this.db
      .prepare("SELECT * FROM workspace_inbox WHERE approval_id = ? ORDER BY at DESC LIMIT 1")
      .get(approvalId) as InboxRow | undefined;
    return r ? toInbox(r) : undefined;
  }

  async updateInbox(id: string, card: Card, state: "open" | "settled"): Promise<InboxRecord | undefined> {
    const db = this.db;
    const changed = await writeTx(
      db,
      () =>
        db
          .prepare("UPDATE workspace_inbox SET card_json = ?, kind = ?, state = ? WHERE id = ?")
          .run(JSON.stringify(card), card.kind, state, id).changes,
      this.wait,
    );
    return changed ? this.getInbox(id) : undefined;
  }

  async inbox(teamId: string, userId: string, limit: number): Promise<InboxRecord[]> {
    const rows = this.db
      .prepare("SELECT * FROM workspace_inbox WHERE team_id = ? AND user_id = ? ORDER BY at DESC, rowid DESC LIMIT ?")
      .all(teamId, userId, limit) as InboxRow[];
    return rows.map(toInbox).filter((x): x is InboxRecord => x !== undefined);
  }
}
