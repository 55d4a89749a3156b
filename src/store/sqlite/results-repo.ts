import type { AuditEvent } from "../../audit/event.js";
import type { PutResultOutcome, ResultRepo, StoredResult, StoredResultMeta } from "../result-repo.js";
import { META_COLUMNS, type ResultRow, toMeta } from "../rows.js";
import { makeAuditWriter } from "./audit-repo.js";
import { type Db, DEFAULT_LOCK_WAIT, type LockWait, writeTx } from "./db.js";

/** SQLite stored results: one row per kept result; eviction and expiry delete rows (secure_delete overwrites them). */
export class SqliteResultRepo implements ResultRepo {
  private readonly audit: (events: readonly AuditEvent[]) => void;

  constructor(
    private readonly db: Db,
    private readonly wait: LockWait = DEFAULT_LOCK_WAIT,
  ) {
    this.audit = makeAuditWriter(db);
  }

  async put(
    r: StoredResult,
    maxTeamBytes: number,
    audit: (evicted: readonly StoredResultMeta[]) => readonly AuditEvent[],
  ): Promise<PutResultOutcome> {
    const dropExpired = this.db.prepare("DELETE FROM stored_results WHERE team_id = ? AND expires_at <= ?");
    const total = this.db.prepare("SELECT COALESCE(SUM(size_bytes), 0) AS n FROM stored_results WHERE team_id = ?");
    const oldest = this.db.prepare(
      `SELECT ${META_COLUMNS} FROM stored_results WHERE team_id = ? ORDER BY created_at, id`,
    );
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
        insert.run({
          ...meta,
          keyId: sealed.keyId,
          nonce: sealed.nonce,
          ciphertext: sealed.ciphertext,
          tag: sealed.tag,
        });
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

  async deleteTeam(teamId: string, audit: readonly AuditEvent[]): Promise<number> {
    const del = this.db.prepare("DELETE FROM stored_results WHERE team_id = ?");
    return writeTx(
      this.db,
      () => {
        const n = del.run(teamId).changes;
        this.audit(audit);
        return n;
      },
      this.wait,
    );
  }

  async teamBytes(teamId: string, now: number): Promise<number> {
    return (
      this.db
        .prepare("SELECT COALESCE(SUM(size_bytes), 0) AS n FROM stored_results WHERE team_id = ? AND expires_at > ?")
        .get(teamId, now) as { n: number }
    ).n;
  }
}
