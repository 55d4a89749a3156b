import type { AuditEvent } from "../../audit/event.js";
import type { PutResultOutcome, ResultRepo, StoredResult, StoredResultMeta } from "../result-repo.js";
import { META_COLUMNS, type ResultRow, toMeta } from "../rows.js";
import { writeAudit } from "./audit-repo.js";
import { xactLock } from "./lock-keys.js";
import type { PgDb } from "./pg-db.js";

/** PostgreSQL stored results; puts for one team are serialised across replicas so its cap holds. */
export class PgResultRepo implements ResultRepo {
  constructor(private readonly db: PgDb) {}

  async put(
    r: StoredResult,
    maxTeamBytes: number,
    audit: (evicted: readonly StoredResultMeta[]) => readonly AuditEvent[],
  ): Promise<PutResultOutcome> {
    return this.db.tx(async (q): Promise<PutResultOutcome> => {
      await xactLock(q, this.db.lockKeys, `stored-results:${r.teamId}`);
      await q.query("DELETE FROM stored_results WHERE team_id = $1 AND expires_at <= $2", [r.teamId, r.createdAt]);
      if (r.sizeBytes > maxTeamBytes) return { stored: false };
      let held = (
        await q.query<{ n: number }>(
          "SELECT COALESCE(SUM(size_bytes), 0)::bigint AS n FROM stored_results WHERE team_id = $1",
          [r.teamId],
        )
      ).rows[0]!.n;
      const evicted: StoredResultMeta[] = [];
      // Oldest first (ids bytewise on ties, as SQLite orders them). Metadata only.
      for (const row of (
        await q.query<ResultRow>(
          `SELECT ${META_COLUMNS} FROM stored_results WHERE team_id = $1 ORDER BY created_at, id COLLATE "C"`,
          [r.teamId],
        )
      ).rows) {
        if (held + r.sizeBytes <= maxTeamBytes) break;
        await q.query("DELETE FROM stored_results WHERE id = $1", [row.id]);
        held -= row.size_bytes;
        evicted.push(toMeta(row));
      }
      const { sealed } = r;
      await q.query(
        `INSERT INTO stored_results (${META_COLUMNS}, key_id, nonce, ciphertext, tag) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
        [
          r.id,
          r.teamId,
          r.channelId,
          r.threadTs,
          r.ownerUserId,
          r.callId,
          r.service,
          r.tool,
          r.sizeBytes,
          r.createdAt,
          r.expiresAt,
          sealed.keyId,
          sealed.nonce,
          sealed.ciphertext,
          sealed.tag,
        ],
      );
      await writeAudit(q, audit(evicted));
      return { stored: true, evicted };
    });
  }

  async get(id: string): Promise<StoredResult | undefined> {
    const r = (await this.db.query<ResultRow>("SELECT * FROM stored_results WHERE id = $1", [id])).rows[0];
    if (!r) return undefined;
    return { ...toMeta(r), sealed: { keyId: r.key_id, nonce: r.nonce, ciphertext: r.ciphertext, tag: r.tag } };
  }

  async deleteExpired(now: number): Promise<number> {
    return (await this.db.query("DELETE FROM stored_results WHERE expires_at <= $1", [now])).rowCount ?? 0;
  }

  async deleteTeam(teamId: string, audit: readonly AuditEvent[]): Promise<number> {
    return this.db.tx(async (q) => {
      const n = (await q.query("DELETE FROM stored_results WHERE team_id = $1", [teamId])).rowCount ?? 0;
      await writeAudit(q, audit);
      return n;
    });
  }

  async teamBytes(teamId: string, now: number): Promise<number> {
    return (
      await this.db.query<{ n: number }>(
        "SELECT COALESCE(SUM(size_bytes), 0)::bigint AS n FROM stored_results WHERE team_id = $1 AND expires_at > $2",
        [teamId, now],
      )
    ).rows[0]!.n;
  }
}
