import type { RowProof } from "../../domain/row-proof.js";
import {
  InitializeParamsSchema,
  MAX_INITIALIZE_JSON,
  type SessionRecord,
  type SessionRecords,
  type SessionRoom,
} from "../../server/session-records.js";
import { StoreError } from "../../store/errors.js";
import { xactLock } from "../../store/postgres/lock-keys.js";
import type { PgDb, Sql } from "../../store/postgres/pg-db.js";
import { versionSql } from "../../store/postgres/row-proof.js";

// The MCP session records every replica shares (migrations/postgres/0005, and 0009 for the digest of
// the host token that opened each session). One primary-key read per
// MCP request (is the session still live?), a throttled last-seen write, and the idle sweep.

function toRecord(r: Record<string, unknown>): SessionRecord {
  let init: unknown;
  try {
    init = JSON.parse(String(r.initialize));
  } catch (err) {
    throw new StoreError("invalid_record", `mcp_sessions row ${String(r.id)}: initialize is not JSON`, { cause: err });
  }
  const parsed = InitializeParamsSchema.safeParse(init);
  if (!parsed.success)
    throw new StoreError(
      "invalid_record",
      `mcp_sessions row ${String(r.id)}: initialize does not parse (${parsed.error.message})`,
    );
  return {
    id: String(r.id),
    teamId: String(r.team_id),
    // NULL on a row from before 0009: no token can be verified against it (the session is refused).
    tokenDigest: typeof r.token_digest === "string" ? r.token_digest : undefined,
    threadHeader: String(r.thread_header),
    protocolVersion: String(r.protocol_version),
    initialize: parsed.data,
    createdAt: Number(r.created_at),
    lastSeenAt: Number(r.last_seen_at),
    endedAt: r.ended_at === null || r.ended_at === undefined ? undefined : Number(r.ended_at),
  };
}

/** Thrown inside the open transaction to roll it back when the deployment (or the team) has no room. */
class RoomRefused extends Error {
  constructor(readonly teamFull = false) {
    super("no room");
  }
}

/** PostgreSQL session records: shared by every replica of one deployment. */
export class PgMcpSessionRepo implements SessionRecords {
  readonly shared = true;

  constructor(private readonly db: PgDb) {}

  async open(
    r: Omit<SessionRecord, "endedAt" | "lastSeenAt">,
    room: SessionRoom,
  ): Promise<{ opened: boolean; ended: number; teamFull?: boolean }> {
    const init = JSON.stringify(r.initialize);
    if (init.length > MAX_INITIALIZE_JSON)
      throw new StoreError("invalid_record", `initialize parameters over ${MAX_INITIALIZE_JSON} bytes`);
    return this.db
      .tx(async (q) => {
        // Opens are serialised across replicas (a transaction lock, per schema), so the count holds until commit.
        // Keyed under the key ring: another role on the server cannot hold it and stall every open.
        const schema = (await q.query<{ s: string }>("SELECT current_schema() AS s")).rows[0]?.s ?? "public";
        await xactLock(q, this.db.lockKeys, `slaude-connect:${schema}:mcp-session-open`);
        const live = Number(
          (await q.query<{ n: number }>("SELECT count(*)::int AS n FROM mcp_sessions WHERE ended_at IS NULL")).rows[0]
            ?.n ?? 0,
        );
        const over = live - room.max + 1;
        let ended = 0;
        if (over > 0) {
          ended =
            (
              await q.query(
                `UPDATE mcp_sessions SET ended_at = $3 WHERE id IN (
                 SELECT id FROM mcp_sessions WHERE ended_at IS NULL AND last_seen_at < $1 ORDER BY last_seen_at, id LIMIT $2 FOR UPDATE)`,
                [room.idleBefore, over, r.createdAt],
              )
            ).rowCount ?? 0;
          // Not enough idle sessions: nothing changes (the ends above roll back with the refusal).
          if (ended < over) throw new RoomRefused();
        }
        if (room.maxPerTeam !== undefined) ended += await this.teamRoom(q, r, room, room.maxPerTeam);
        await q.query(
          "INSERT INTO mcp_sessions (id, team_id, token_digest, thread_header, protocol_version, initialize, created_at, last_seen_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $7)",
          [r.id, r.teamId, r.tokenDigest ?? null, r.threadHeader, r.protocolVersion, init, r.createdAt],
        );
        return { opened: true, ended };
      })
      .catch((err: unknown) => {
        if (err instanceof RoomRefused) return { opened: false, ended: 0, ...(err.teamFull ? { teamFull: true } : {}) };
        throw err;
      });
  }

  /** Under the open lock: ends the team's own idle sessions to bring it under `max`, or refuses (never another team's). */
  private async teamRoom(
    q: Sql,
    r: { teamId: string; createdAt: number },
    room: SessionRoom,
    max: number,
  ): Promise<number> {
    const live = Number(
      (
        await q.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM mcp_sessions WHERE ended_at IS NULL AND team_id = $1",
          [r.teamId],
        )
      ).rows[0]?.n ?? 0,
    );
    const over = live - max + 1;
    if (over <= 0) return 0;
    const ended =
      (
        await q.query(
          `UPDATE mcp_sessions SET ended_at = $4 WHERE id IN (
             SELECT id FROM mcp_sessions WHERE ended_at IS NULL AND team_id = $1 AND last_seen_at < $2 ORDER BY last_seen_at, id LIMIT $3 FOR UPDATE)`,
          [r.teamId, room.idleBefore, over, r.createdAt],
        )
      ).rowCount ?? 0;
    if (ended < over) throw new RoomRefused(true);
    return ended;
  }

  async get(id: string): Promise<SessionRecord | undefined> {
    const row = (await this.db.query("SELECT * FROM mcp_sessions WHERE id = $1", [id])).rows[0];
    return row === undefined ? undefined : toRecord(row);
  }

  /** `get`, with the live record's version from the same read (row-proof.ts; null when not live). */
  async getProved(id: string): Promise<{ record: SessionRecord | undefined; proof: RowProof }> {
    const v = versionSql({ kind: "session", id, version: null }, 2);
    const row = (
      await this.db.query(
        `SELECT s.*, proof.v AS proof_version FROM (SELECT ${v.sql} AS v) proof LEFT JOIN mcp_sessions s ON s.id = $1`,
        [id, ...v.params],
      )
    ).rows[0] as (Record<string, unknown> & { proof_version: string | null }) | undefined;
    if (!row) throw new Error("the session's proved read returned no row");
    const { proof_version: version, ...record } = row;
    return { record: record.id !== null ? toRecord(record) : undefined, proof: { kind: "session", id, version } };
  }

  async touch(id: string, now: number): Promise<void> {
    await this.db.query(
      "UPDATE mcp_sessions SET last_seen_at = $2 WHERE id = $1 AND ended_at IS NULL AND last_seen_at < $2",
      [id, now],
    );
  }

  async end(id: string, now: number): Promise<void> {
    await this.db.query("UPDATE mcp_sessions SET ended_at = $2 WHERE id = $1 AND ended_at IS NULL", [id, now]);
  }

  async notLive(ids: readonly string[]): Promise<string[]> {
    if (!ids.length) return [];
    const live = new Set(
      (
        await this.db.query<{ id: string }>(
          "SELECT id FROM mcp_sessions WHERE id = ANY($1::text[]) AND ended_at IS NULL",
          [ids],
        )
      ).rows.map((r) => r.id),
    );
    return ids.filter((id) => !live.has(id));
  }

  async expireIdle(o: { idleBefore: number; now: number; purgeBefore: number }): Promise<number> {
    const ended = await this.db.query(
      "UPDATE mcp_sessions SET ended_at = $2 WHERE ended_at IS NULL AND last_seen_at < $1",
      [o.idleBefore, o.now],
    );
    await this.db.query("DELETE FROM mcp_sessions WHERE ended_at IS NOT NULL AND ended_at < $1", [o.purgeBefore]);
    return ended.rowCount ?? 0;
  }
}
