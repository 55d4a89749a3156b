import type { Card } from "../../domain/card.js";
import type { ThreadRef } from "../../domain/thread.js";
import type { InboxRecord, WorkspaceChannelRecord, WorkspaceUserRecord } from "../records.js";
import type { WorkspaceSeed, WorkspaceThreadRecord } from "../workspace-repo.js";
import type { SqlDialect } from "./dialect.js";
import { stmt } from "./dialect.js";
import { type InboxRow, toInbox } from "./inbox-rows.js";
import { changes, lock, type Program, rows } from "./program.js";

// The local workspace, once for both adapters (src/store/sql/program.ts): ties broken by insertion
// order (SQLite's rowid, PostgreSQL's seq) and names compared bytewise, so lists come out alike.

/** Whether a statement finds any row. */
function* exists(s: ReturnType<typeof stmt>): Program<boolean> {
  return (yield* rows(s)).length > 0;
}

/** Seeds an empty team's users, channels and members; false when the team already has users. */
export function* seedWorkspace(seed: WorkspaceSeed, at: number): Program<boolean> {
  const team = seed.teamId;
  // Two replicas seeding at once: the lock makes the second see the first's users.
  yield* lock(`workspace-seed:${team}`);
  if (yield* exists(stmt((p) => `SELECT 1 FROM workspace_users WHERE team_id = ${p(team)} LIMIT 1`))) return false;
  for (const u of seed.users)
    yield* changes(
      stmt(
        (p) => `INSERT INTO workspace_users (team_id, id, name, admin, created_at)
          VALUES (${p(team)}, ${p(u.id)}, ${p(u.name)}, ${p(u.admin ? 1 : 0)}, ${p(at)})`,
      ),
    );
  for (const c of seed.channels) {
    yield* changes(
      stmt(
        (p) => `INSERT INTO workspace_channels (team_id, id, name, created_at)
          VALUES (${p(team)}, ${p(c.id)}, ${p(c.name)}, ${p(at)}) ON CONFLICT DO NOTHING`,
      ),
    );
    for (const m of c.members) yield* addMember(team, c.id, m, at);
  }
  return true;
}

function* addMember(teamId: string, channelId: string, userId: string, at: number): Program<number> {
  return yield* changes(
    stmt(
      (p) => `INSERT INTO workspace_members (team_id, channel_id, user_id, added_at)
        VALUES (${p(teamId)}, ${p(channelId)}, ${p(userId)}, ${p(at)}) ON CONFLICT DO NOTHING`,
    ),
  );
}

/** A team's users by name. */
export function* workspaceUsers(teamId: string, d: SqlDialect): Program<WorkspaceUserRecord[]> {
  const found = yield* rows<{ id: string; name: string; admin: number }>(
    stmt(
      (p) => `SELECT id, name, admin FROM workspace_users WHERE team_id = ${p(teamId)}
        ORDER BY ${d.bytewise("name")}, ${d.bytewise("id")}`,
    ),
  );
  return found.map((r) => ({ id: r.id, name: r.name, admin: r.admin === 1 }));
}

/** A team's channels by name, each with its members in the order they joined. */
export function* workspaceChannels(teamId: string, d: SqlDialect): Program<WorkspaceChannelRecord[]> {
  const chans = yield* rows<{ id: string; name: string }>(
    stmt(
      (p) => `SELECT id, name FROM workspace_channels WHERE team_id = ${p(teamId)}
        ORDER BY ${d.bytewise("name")}, ${d.bytewise("id")}`,
    ),
  );
  const members = yield* rows<{ channel_id: string; user_id: string }>(
    stmt(
      (p) => `SELECT channel_id, user_id FROM workspace_members WHERE team_id = ${p(teamId)}
        ORDER BY added_at, ${d.bytewise("user_id")}`,
    ),
  );
  return chans.map((c) => ({
    id: c.id,
    name: c.name,
    members: members.filter((m) => m.channel_id === c.id).map((m) => m.user_id),
  }));
}

/** Whether a user is in a channel. */
export function* isWorkspaceMember(teamId: string, channelId: string, userId: string): Program<boolean> {
  return yield* exists(
    stmt(
      (p) => `SELECT 1 FROM workspace_members WHERE team_id = ${p(teamId)} AND channel_id = ${p(channelId)}
        AND user_id = ${p(userId)}`,
    ),
  );
}

/** Adds a known user to a known channel, or removes them; false when either is unknown. */
export function* setWorkspaceMember(
  teamId: string,
  channelId: string,
  userId: string,
  member: boolean,
  at: number,
): Program<boolean> {
  const known =
    (yield* channelKnown(teamId, channelId)) &&
    (yield* exists(stmt((p) => `SELECT 1 FROM workspace_users WHERE team_id = ${p(teamId)} AND id = ${p(userId)}`)));
  if (!known) return false;
  if (member) yield* addMember(teamId, channelId, userId, at);
  else
    yield* changes(
      stmt(
        (p) => `DELETE FROM workspace_members WHERE team_id = ${p(teamId)} AND channel_id = ${p(channelId)}
          AND user_id = ${p(userId)}`,
      ),
    );
  return true;
}

function* channelKnown(teamId: string, channelId: string): Program<boolean> {
  return yield* exists(
    stmt((p) => `SELECT 1 FROM workspace_channels WHERE team_id = ${p(teamId)} AND id = ${p(channelId)}`),
  );
}

/** Inserts the thread if new and drops the team's oldest past the cap. */
export function* addWorkspaceThread(t: WorkspaceThreadRecord, maxPerTeam: number, d: SqlDialect): Program<void> {
  const { teamId, channelId, threadTs } = t.thread;
  yield* changes(
    stmt(
      (p) => `INSERT INTO workspace_threads (team_id, channel_id, thread_ts, started_by, created_at)
        VALUES (${p(teamId)}, ${p(channelId)}, ${p(threadTs)}, ${p(t.startedBy)}, ${p(t.at)}) ON CONFLICT DO NOTHING`,
    ),
  );
  // Notes go with their thread (ON DELETE CASCADE).
  const order = d.insertOrder;
  yield* changes(
    stmt(
      (p) => `DELETE FROM workspace_threads WHERE ${order} IN (SELECT ${order} FROM workspace_threads
        WHERE team_id = ${p(teamId)} ORDER BY created_at DESC, ${order} DESC ${d.noLimit} OFFSET ${p(maxPerTeam)})`,
    ),
  );
}

/** A channel's threads, newest first. */
export function* workspaceThreads(
  teamId: string,
  channelId: string,
  limit: number,
  d: SqlDialect,
): Program<WorkspaceThreadRecord[]> {
  const found = yield* rows<{ thread_ts: string; started_by: string; created_at: number }>(
    stmt(
      (p) => `SELECT thread_ts, started_by, created_at FROM workspace_threads WHERE team_id = ${p(teamId)}
        AND channel_id = ${p(channelId)} ORDER BY created_at DESC, ${d.insertOrder} DESC LIMIT ${p(limit)}`,
    ),
  );
  return found.map((r) => ({
    thread: { teamId, channelId, threadTs: r.thread_ts },
    startedBy: r.started_by,
    at: r.created_at,
  }));
}

/** Adds a note to a thread of a known channel (the thread too, if new), keeping the newest `maxPerThread`. */
export function* addWorkspaceNote(
  thread: ThreadRef,
  text: string,
  at: number,
  limits: { maxPerThread: number; maxThreads: number },
  d: SqlDialect,
): Program<void> {
  const { teamId, channelId, threadTs } = thread;
  // A note may be about a thread the console never started (any host can name a thread).
  if (!(yield* channelKnown(teamId, channelId))) return;
  yield* addWorkspaceThread({ thread, startedBy: "", at }, limits.maxThreads, d);
  yield* changes(
    stmt(
      (p) => `INSERT INTO workspace_notes (team_id, channel_id, thread_ts, text, at)
        VALUES (${p(teamId)}, ${p(channelId)}, ${p(threadTs)}, ${p(text)}, ${p(at)})`,
    ),
  );
  yield* changes(
    stmt(
      (p) => `DELETE FROM workspace_notes WHERE id IN (SELECT id FROM workspace_notes WHERE team_id = ${p(teamId)}
        AND channel_id = ${p(channelId)} AND thread_ts = ${p(threadTs)}
        ORDER BY id DESC ${d.noLimit} OFFSET ${p(limits.maxPerThread)})`,
    ),
  );
}

/** A thread's newest `limit` notes, oldest first. */
export function* workspaceNotes(thread: ThreadRef, limit: number): Program<{ text: string; at: number }[]> {
  return yield* rows<{ text: string; at: number }>(
    stmt(
      (p) => `SELECT text, at FROM (SELECT id, text, at FROM workspace_notes WHERE team_id = ${p(thread.teamId)}
        AND channel_id = ${p(thread.channelId)} AND thread_ts = ${p(thread.threadTs)}
        ORDER BY id DESC LIMIT ${p(limit)}) n ORDER BY id`,
    ),
  );
}

/** Puts an inbox card, keeping a user's `maxPerUser`: settled cards go first, then the oldest open ones. */
export function* putInboxItem(item: InboxRecord, maxPerUser: number, d: SqlDialect): Program<void> {
  yield* changes(
    stmt(
      (p) => `INSERT INTO workspace_inbox (id, team_id, user_id, at, kind, card_json, approval_id, subject_json, state)
        VALUES (${p(item.id)}, ${p(item.teamId)}, ${p(item.userId)}, ${p(item.at)}, ${p(item.card.kind)},
        ${p(JSON.stringify(item.card))}, ${p(item.approvalId)},
        ${p(item.subject ? JSON.stringify(item.subject) : null)}, ${p(item.state)})`,
    ),
  );
  yield* changes(
    stmt(
      (p) => `DELETE FROM workspace_inbox WHERE id IN (SELECT id FROM workspace_inbox WHERE team_id = ${p(item.teamId)}
        AND user_id = ${p(item.userId)} ORDER BY state = 'open' DESC, at DESC, ${d.insertOrder} DESC
        ${d.noLimit} OFFSET ${p(maxPerUser)})`,
    ),
  );
}

/** One inbox card by id, or the newest for an approval. */
export function* inboxItemBy(
  column: "id" | "approval_id",
  value: string,
  d: SqlDialect,
): Program<InboxRecord | undefined> {
  const [r] = yield* rows<InboxRow>(
    stmt(
      (p) => `SELECT * FROM workspace_inbox WHERE ${column} = ${p(value)}
        ORDER BY at DESC, ${d.insertOrder} DESC LIMIT 1`,
    ),
  );
  return r ? toInbox(r) : undefined;
}

/** Replaces an inbox card and its state; the card as read back, undefined when there was none. */
export function* updateInboxItem(
  id: string,
  card: Card,
  state: "open" | "settled",
  d: SqlDialect,
): Program<InboxRecord | undefined> {
  const n = yield* changes(
    stmt(
      (p) => `UPDATE workspace_inbox SET card_json = ${p(JSON.stringify(card))}, kind = ${p(card.kind)},
        state = ${p(state)} WHERE id = ${p(id)}`,
    ),
  );
  return n ? yield* inboxItemBy("id", id, d) : undefined;
}

/** A user's inbox, newest first; a card that does not parse is left out. */
export function* inboxItems(teamId: string, userId: string, limit: number, d: SqlDialect): Program<InboxRecord[]> {
  const found = yield* rows<InboxRow>(
    stmt(
      (p) => `SELECT * FROM workspace_inbox WHERE team_id = ${p(teamId)} AND user_id = ${p(userId)}
        ORDER BY at DESC, ${d.insertOrder} DESC LIMIT ${p(limit)}`,
    ),
  );
  return found.map(toInbox).filter((x): x is InboxRecord => x !== undefined);
}
