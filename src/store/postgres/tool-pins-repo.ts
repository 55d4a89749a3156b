import type { RowProof } from "../../domain/row-proof.js";
import type { ToolPin } from "../records.js";
import { toPin } from "../sql/pin-rows.js";
import type { PinWrite, ToolPinRepo } from "../store.js";
import { writeAudit } from "./audit-repo.js";
import { xactLock } from "./lock-keys.js";
import type { PgDb, Sql } from "./pg-db.js";
import { versionSql } from "./row-proof.js";

/** PostgreSQL tool pins; `update` holds a per-(team, service) advisory lock so replicas' observations never overwrite each other. */
export class PgToolPinRepo implements ToolPinRepo {
  constructor(private readonly db: PgDb) {}

  async get(teamId: string, service: string, tool: string): Promise<ToolPin | undefined> {
    const r = (
      await this.db.query("SELECT * FROM tool_pins WHERE team_id = $1 AND service = $2 AND tool = $3", [
        teamId,
        service,
        tool,
      ])
    ).rows[0];
    return r === undefined ? undefined : toPin(r);
  }

  /** The pin and its version from the same read (row-proof.ts). */
  async getProved(
    teamId: string,
    service: string,
    tool: string,
  ): Promise<{ pin: ToolPin | undefined; proof: RowProof }> {
    const key = { kind: "pin", teamId, service, tool } as const;
    const v = versionSql({ ...key, version: null }, 4);
    const r = (
      await this.db.query(
        `SELECT p.*, proof.v AS proof_version FROM (SELECT ${v.sql} AS v) proof
         LEFT JOIN tool_pins p ON p.team_id = $1 AND p.service = $2 AND p.tool = $3`,
        [teamId, service, tool, ...v.params],
      )
    ).rows[0] as (Record<string, unknown> & { proof_version: string | null }) | undefined;
    if (!r) throw new Error("the pin's proved read returned no row");
    // The row is parsed strictly, as `get` parses it: without the column the proof added.
    const { proof_version: version, ...row } = r;
    return { pin: row.team_id !== null ? toPin(row) : undefined, proof: { ...key, version } };
  }

  async list(teamId: string, service: string): Promise<ToolPin[]> {
    return this.readService(this.db, teamId, service);
  }

  async undecided(f: { teamId?: string; service?: string; tool?: string; limit: number }): Promise<ToolPin[]> {
    const where = ["status <> 'pinned'"];
    const params: (string | number)[] = [];
    const p = (v: string | number): string => {
      params.push(v);
      return `$${params.length}`;
    };
    if (f.teamId !== undefined) where.push(`team_id = ${p(f.teamId)}`);
    if (f.service !== undefined) where.push(`service = ${p(f.service)}`);
    if (f.tool !== undefined) where.push(`tool = ${p(f.tool)}`);
    const limit = p(Math.max(0, Math.floor(f.limit)));
    return (
      await this.db.query(
        `SELECT * FROM tool_pins WHERE ${where.join(" AND ")} ORDER BY changed_at DESC, team_id COLLATE "C", service COLLATE "C", tool COLLATE "C" LIMIT ${limit}`,
        params,
      )
    ).rows.map(toPin);
  }

  async update<T>(teamId: string, service: string, change: (current: readonly ToolPin[]) => PinWrite<T>): Promise<T> {
    return this.db.tx(async (q) => {
      await xactLock(q, this.db.lockKeys, JSON.stringify(["tool-pins", teamId, service]));
      const out = change(await this.readService(q, teamId, service));
      for (const w of out.writes) {
        // The change function is ours, but a row of another team or service here would be a bug that leaks pins.
        if (w.teamId !== teamId || w.service !== service) throw new Error("a pin write outside its team and service");
        await q.query(
          `INSERT INTO tool_pins (team_id, service, tool, status, pinned_hash, pinned_definition, pending_hash, pending_definition, first_seen_at, changed_at, decided_at, decided_by)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
           ON CONFLICT (team_id, service, tool) DO UPDATE SET status = excluded.status, pinned_hash = excluded.pinned_hash,
             pinned_definition = excluded.pinned_definition, pending_hash = excluded.pending_hash, pending_definition = excluded.pending_definition,
             changed_at = excluded.changed_at, decided_at = excluded.decided_at, decided_by = excluded.decided_by`,
          [
            w.teamId,
            w.service,
            w.tool,
            w.status,
            w.pinnedHash,
            w.pinnedDefinition,
            w.pendingHash,
            w.pendingDefinition,
            w.firstSeenAt,
            w.changedAt,
            w.decidedAt,
            w.decidedBy,
          ],
        );
      }
      await writeAudit(q, out.audit);
      return out.value;
    });
  }

  private async readService(q: Sql, teamId: string, service: string): Promise<ToolPin[]> {
    return (
      await q.query('SELECT * FROM tool_pins WHERE team_id = $1 AND service = $2 ORDER BY tool COLLATE "C"', [
        teamId,
        service,
      ])
    ).rows.map(toPin);
  }
}
