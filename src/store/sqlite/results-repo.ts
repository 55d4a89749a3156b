import type { AuditEvent } from "../../audit/event.js";
import type { PutResultOutcome, ResultRepo, StoredResult, StoredResultMeta } from "../result-repo.js";
import { makeAuditWriter } from "./audit-repo.js";
import { DEFAULT_LOCK_WAIT, writeTx, type Db, type LockWait } from "./db.js";

interface ResultRow {
  id: string;
  team_id: string;
  channel_id: string;
  thread_ts: string;
  owner_user_id: string;
  call_id: string;
  service: string;
  tool: string;
  size_bytes: number;
  created_at: number;
  expires_at: number;
  key_id: string;
  nonce: Buffer;
  ciphertext: Buffer;
  tag: Buffer;
}

const META_COLUMNS = "id, team_id, channel_id, thread_ts, owner_user_id, call_id, service, tool, size_bytes, created_at, expires_at";

function toMeta(r: Omit<ResultRow, "key_id" | "nonce" | "ciphertext" | "tag">): StoredResultMeta {
  return {
    id: r.id,
    teamId: r.team_id,
    channelId: r.channel_id,
    threadTs: r.thread_ts,
    ownerUserId: r.owner_user_id,
    callId: r.call_id,
    service: r.service,
    tool: r.tool,
    sizeBytes: r.size_bytes,
    createdAt: r.created_at,
    expiresAt: r.expires_at,
  };
}

/** SQLite stored results: one row per kept result; eviction and expiry delete rows (secure_delete overwrites them). */
export class SqliteResultRepo implements ResultRepo {
  private readonly audit: (events: readonly AuditEvent[]) => void;

  constructor(
    private readonly db: Db,
    private readonly wait: LockWait = DEFAULT_LOCK_WAIT,
  ) {
    this.audit = makeAuditWriter(db);
  }

  async put(r: StoredResult, maxTeamBytes: number, audit: (evicted: readonly StoredResultMeta[]) => readonly AuditEvent[]): Promise<PutResultOutcome> {
    const dropExpired = this.db.prepare("DELETE FROM stored_results WHERE team_id = ? AND expires_at <= ?");
    const total = this.db.prepare("SELECT COALESCE(SUM(size_bytes), 0) AS n FROM stored_results WHERE team_id = ?");
    const oldest = this.db.prepare(`SELECT ${META_COLUMNS} FROM stored_results WHERE team_id = ? ORDER BY created_at, id`);
    const remove = this.db.prepare("DELETE FROM stored_results WHERE id = ?");
    const insert = this.db.prepare(`INSERT INTO stored_results (${META_COLUMNS}, key_id, nonce, ciphertext, tag)
      VALUES (@id, @teamId, @channelId, @threadTs, @ownerUserId, @callId, @service, @tool, @sizeBytes, @createdAt, @expiresAt, @keyId, @nonce, @ciphertext, @tag)`);
    return writeTx(
      this.db,
      (): PutResultOutcome => {
        dropExpired.run(r.teamId, r.createdAt);
        if (r.sizeBytes > maxTeamBytes) return { stored: false };
        let held = (total.get(r.teamId) as { n: number }).n;
        const evicted: StoredResultMeta[] = [];
        // Oldest first. Metadata only; a team holds few rows (each is larger than the inline cap).
        for (const row of oldest.all(r.teamId) as ResultRow[]) {
          if (held + r.sizeBytes <= maxTeamBytes) break;
          remove.run(row.id);
          held -= row.size_bytes;
          evicted.push(toMeta(row));
        }
        const { sealed, ...meta } = r;
        insert.run({ ...meta, keyId: sealed.keyId, nonce: sealed.nonce, ciphertext: sealed.ciphertext, tag: sealed.tag });
        this.audit(audit(evicted));
        return { stored: true, evicted };
      },
      this.wait,
    );
  }

  async get(id: string): Promise<StoredResult | undefined> {
    const r = this.db.prepare("SELECT * FROM stored_results WHERE id = ?").get(id) as ResultRow | undefined;
    if (!r) return undefined;
    return { ...toMeta(r), sealed: { keyId: r.key_id, nonce: r.nonce, ciphertext: r.ciphertext, tag: r.tag } };
  }

  async deleteExpired(now: number): Promise<number> {
    const del = this.db.prepare("DELETE FROM stored_results WHERE expires_at <= ?");
    return writeTx(this.db, () => del.run(now).changes, this.wait);
  }

  async teamBytes(teamId: string, now: number): Promise<number> {
    return (this.db.prepare("SELECT COALESCE(SUM(size_bytes), 0) AS n FROM stored_results WHERE team_id = ? AND expires_at > ?").get(teamId, now) as { n: number }).n;
  }
}
