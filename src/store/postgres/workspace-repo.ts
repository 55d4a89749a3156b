import type { Card } from "../../domain/card.js";
import type { ThreadRef } from "../../domain/thread.js";
import type { InboxRecord, WorkspaceChannelRecord, WorkspaceUserRecord } from "../records.js";
import { type InboxRow, toInbox } from "../sqlite/workspace-repo.js";
import type { WorkspaceRepo, WorkspaceSeed, WorkspaceThreadRecord } from "../workspace-repo.js";
import { xactLock } from "./lock-keys.js";
import type { PgDb, Sql } from "./pg-db.js";

// The local workspace on PostgreSQL: the SQLite repository's statements, with `seq` where SQLite
// breaks ties by rowid, and names compared bytewise (COLLATE "C") so lists come out in the same order.

type Row = InboxRow & Record<string, unknown>;

/** PostgreSQL state of the local workspace; cards read back go through the same strict parser. */
export class PgWorkspaceRepo implements WorkspaceRepo {
  constructor(private readonly db: PgDb) {}

  async seed(seed: WorkspaceSeed, at: number): Promise<boolean> {
    return this.db.tx(async (q) => {
      // Two replicas seeding at once: the lock makes the second see the first's users.
      await xactLock(q, this.db.lockKeys, `workspace-seed:${seed.teamId}`);
      if ((await q.query("SELECT 1 FROM workspace_users WHERE team_id = $1 LIMIT 1", [seed.teamId])).rowCount)
        return false;
      for (const u of seed.users)
        await q.query(
          "INSERT INTO workspace_users (team_id, id, name, admin, created_at) VALUES ($1, $2, $3, $4, $5)",
          [seed.teamId, u.id, u.name, u.admin ? 1 : 0, at],
        );
      for (const c of seed.channels) {
        await q.query(
          "INSERT INTO workspace_channels (team_id, id, name, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
          [seed.teamId, c.id, c.name, at],
        );
        for (const m of c.members)
          await q.query(
            "INSERT INTO workspace_members (team_id, channel_id, user_id, added_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
            [seed.teamId, c.id, m, at],
          );
      }
      return true;
    });
  }

  async users(teamId: string): Promise<WorkspaceUserRecord[]> {
    const rows = (
      await this.db.query<{ id: string; name: string; admin: number }>(
        'SELECT id, name, admin FROM workspace_users WHERE team_id = $1 ORDER BY name COLLATE "C", id COLLATE "C"',
        [teamId],
      )
    ).rows;
    return rows.map((r) => ({ id: r.id, name: r.name, admin: r.admin === 1 }));
  }

  async channels(teamId: string): Promise<WorkspaceChannelRecord[]> {
    const chans = (
      await this.db.query<{ id: string; name: string }>(
        'SELECT id, name FROM workspace_channels WHERE team_id = $1 ORDER BY name COLLATE "C", id COLLATE "C"',
        [teamId],
      )
    ).rows;
    const members = (
      await this.db.query<{ channel_id: string; user_id: string }>(
        'SELECT channel_id, user_id FROM workspace_members WHERE team_id = $1 ORDER BY added_at, user_id COLLATE "C"',
        [teamId],
      )
    ).rows;
    return chans.map((c) => ({
      id: c.id,
      name: c.name,
      members: members.filter((m) => m.channel_id === c.id).map((m) => m.user_id),
    }));
  }

  async isMember(teamId: string, channelId: string, userId: string): Promise<boolean> {
    return Boolean(
      (
        await this.db.query("SELECT 1 FROM workspace_members WHERE team_id = $1 AND channel_id = $2 AND user_id = $3", [
          teamId,
          channelId,
          userId,
        ])
      ).rowCount,
    );
  }

  async setMember(teamId: string, channelId: string, userId: string, member: boolean, at: number): Promise<boolean> {
    return this.db.tx(async (q) => {
      const channel = (
        await q.query("SELECT 1 FROM workspace_channels WHERE team_id = $1 AND id = $2", [teamId, channelId])
      ).rowCount;
      const user = (await q.query("SELECT 1 FROM workspace_users WHERE team_id = $1 AND id = $2", [teamId, userId]))
        .rowCount;
      if (!channel || !user) return false;
      if (member)
        await q.query(
          "INSERT INTO workspace_members (team_id, channel_id, user_id, added_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
          [teamId, channelId, userId, at],
        );
      else
        await q.query("DELETE FROM workspace_members WHERE team_id = $1 AND channel_id = $2 AND user_id = $3", [
          teamId,
          channelId,
          userId,
        ]);
      return true;
    });
  }

  /** Inserts the thread if new and drops the team's oldest past the cap; inside a transaction. */
  private async addThreadInTx(q: Sql, t: WorkspaceThreadRecord, maxPerTeam: number): Promise<void> {
    const { teamId, channelId, threadTs } = t.thread;
    await q.query(
      "INSERT INTO workspace_threads (team_id, channel_id, thread_ts, started_by, created_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
      [teamId, channelId, threadTs, t.startedBy, t.at],
    );
    // Notes go with their thread (ON DELETE CASCADE).
    await q.query(
      `DELETE FROM workspace_threads WHERE seq IN (
         SELECT seq FROM workspace_threads WHERE team_id = $1 ORDER BY created_at DESC, seq DESC OFFSET $2)`,
      [teamId, maxPerTeam],
    );
  }

  async addThread(t: WorkspaceThreadRecord, maxPerTeam: number): Promise<void> {
    await this.db.tx((q) => this.addThreadInTx(q, t, maxPerTeam));
  }

  async threads(teamId: string, channelId: string, limit: number): Promise<WorkspaceThreadRecord[]> {
    const rows = (
      await this.db.query<{ thread_ts: string; started_by: string; created_at: number }>(
        "SELECT thread_ts, started_by, created_at FROM workspace_threads WHERE team_id = $1 AND channel_id = $2 ORDER BY created_at DESC, seq DESC LIMIT $3",
        [teamId, channelId, limit],
      )
    ).rows;
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
    await this.db.tx(async (q) => {
      // A note may be about a thread the console never started (any host can name a thread).
      if (
        !(
          await q.query("SELECT 1 FROM workspace_channels WHERE team_id = $1 AND id = $2", [
            thread.teamId,
            thread.channelId,
          ])
        ).rowCount
      )
        return;
      await this.addThreadInTx(q, { thread, startedBy: "", at }, limits.maxThreads);
      await q.query(
        "INSERT INTO workspace_notes (team_id, channel_id, thread_ts, text, at) VALUES ($1, $2, $3, $4, $5)",
        [thread.teamId, thread.channelId, thread.threadTs, text, at],
      );
      await q.query(
        `DELETE FROM workspace_notes WHERE id IN (
           SELECT id FROM workspace_notes WHERE team_id = $1 AND channel_id = $2 AND thread_ts = $3 ORDER BY id DESC OFFSET $4)`,
        [thread.teamId, thread.channelId, thread.threadTs, limits.maxPerThread],
      );
    });
  }

  async notes(thread: ThreadRef, limit: number): Promise<{ text: string; at: number }[]> {
    return (
      await this.db.query<{ text: string; at: number }>(
        "SELECT text, at FROM (SELECT id, text, at FROM workspace_notes WHERE team_id = $1 AND channel_id = $2 AND thread_ts = $3 ORDER BY id DESC LIMIT $4) n ORDER BY id",
        [thread.teamId, thread.channelId, thread.threadTs, limit],
      )
    ).rows;
  }

  async putInbox(item: InboxRecord, maxPerUser: number): Promise<void> {
    await this.db.tx(async (q) => {
      await q.query(
        "INSERT INTO workspace_inbox (id, team_id, user_id, at, kind, card_json, approval_id, subject_json, state) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        [
          item.id,
          item.teamId,
          item.userId,
          item.at,
          item.card.kind,
          JSON.stringify(item.card),
          item.approvalId,
          item.subject ? JSON.stringify(item.subject) : null,
          item.state,
        ],
      );
      // Settled cards go first, then the oldest open ones.
      await q.query(
        `DELETE FROM workspace_inbox WHERE id IN (
           SELECT id FROM workspace_inbox WHERE team_id = $1 AND user_id = $2 ORDER BY state = 'open' DESC, at DESC, seq DESC OFFSET $3)`,
        [item.teamId, item.userId, maxPerUser],
      );
    });
  }

  async getInbox(id: string): Promise<InboxRecord | undefined> {
    const r = (await this.db.query<Row>("SELECT * FROM workspace_inbox WHERE id = $1", [id])).rows[0];
    return r ? toInbox(r) : undefined;
  }

  async inboxByApproval(approvalId: string): Promise<InboxRecord | undefined> {
    const r = (
      await this.db.query<Row>(
        "SELECT * FROM workspace_inbox WHERE approval_id = $1 ORDER BY at DESC, seq DESC LIMIT 1",
        [approvalId],
      )
    ).rows[0];
    return r ? toInbox(r) : undefined;
  }

  async updateInbox(id: string, card: Card, state: "open" | "settled"): Promise<InboxRecord | undefined> {
    const changed = (
      await this.db.query("UPDATE workspace_inbox SET card_json = $2, kind = $3, state = $4 WHERE id = $1", [
        id,
        JSON.stringify(card),
        card.kind,
        state,
      ])
    ).rowCount;
    return changed ? this.getInbox(id) : undefined;
  }

  async inbox(teamId: string, userId: string, limit: number): Promise<InboxRecord[]> {
    const rows = (
      await this.db.query<Row>(
        "SELECT * FROM workspace_inbox WHERE team_id = $1 AND user_id = $2 ORDER BY at DESC, seq DESC LIMIT $3",
        [teamId, userId, limit],
      )
    ).rows;
    return rows.map(toInbox).filter((x): x is InboxRecord => x !== undefined);
  }
}
