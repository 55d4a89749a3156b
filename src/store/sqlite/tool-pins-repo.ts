import { z } from "zod";
import type { AuditEvent } from "../../audit/event.js";
import type { ToolPin } from "../records.js";
import type { PinWrite, ToolPinRepo } from "../store.js";
import { makeAuditWriter } from "./audit-repo.js";
import { DEFAULT_LOCK_WAIT, writeTx, type Db, type LockWait } from "./db.js";

/** A row read back is parsed like any other edge: an unknown status is an error, not a guess. */
const pinRow = z
  .object({
    team_id: z.string(),
    service: z.string(),
    tool: z.string(),
    status: z.enum(["pinned", "quarantined", "new", "rejected"]),
    pinned_hash: z.string().nullable(),
    pinned_definition: z.string().nullable(),
    pending_hash: z.string().nullable(),
    pending_definition: z.string().nullable(),
    first_seen_at: z.number(),
    changed_at: z.number(),
    decided_at: z.number().nullable(),
    decided_by: z.string().nullable(),
  })
  .strict();

/** Maps a row (validated) to a pin; shared with the PostgreSQL adapter. */
export function toPin(raw: unknown): ToolPin {
  const r = pinRow.parse(raw);
  return {
    teamId: r.team_id,
    service: r.service,
    tool: r.tool,
    status: r.status,
    pinnedHash: r.pinned_hash,
    pinnedDefinition: r.pinned_definition,
    pendingHash: r.pending_hash,
    pendingDefinition: r.pending_definition,
    firstSeenAt: r.first_seen_at,
    changedAt: r.changed_at,
    decidedAt: r.decided_at,
    decidedBy: r.decided_by,
  };
}

/** SQLite tool pins; `update` runs the caller's pure change inside one BEGIN IMMEDIATE transaction. */
export class SqliteToolPinRepo implements ToolPinRepo {
  private readonly writeAudit: (events: readonly AuditEvent[]) => void;

  constructor(
    private readonly db: Db,
    private readonly wait: LockWait = DEFAULT_LOCK_WAIT,
  ) {
    this.writeAudit = makeAuditWriter(db);
  }

  async get(teamId: string, service: string, tool: string): Promise<ToolPin | undefined> {
    const r = this.db.prepare("SELECT * FROM tool_pins WHERE team_id = ? AND service = ? AND tool = ?").get(teamId, service, tool);
    return r === undefined ? undefined : toPin(r);
  }

  async list(teamId: string, service: string): Promise<ToolPin[]> {
    return this.readService(teamId, service);
  }

  async undecided(f: { teamId?: string; service?: string; tool?: string; limit: number }): Promise<ToolPin[]> {
    const where = ["status <> 'pinned'"];
    const params: (string | number)[] = [];
    if (f.teamId !== undefined) (where.push("team_id = ?"), params.push(f.teamId));
    if (f.service !== undefined) (where.push("service = ?"), params.push(f.service));
    if (f.tool !== undefined) (where.push("tool = ?"), params.push(f.tool));
    params.push(Math.max(0, Math.floor(f.limit)));
    return this.db.prepare(`SELECT * FROM tool_pins WHERE ${where.join(" AND ")} ORDER BY changed_at DESC, team_id, service, tool LIMIT ?`).all(...params).map(toPin);
  }

  async update<T>(teamId: string, service: string, change: (current: readonly ToolPin[]) => PinWrite<T>): Promise<T> {
    const upsert = this.db.prepare(`INSERT INTO tool_pins (team_id, service, tool, status, pinned_hash, pinned_definition, pending_hash, pending_definition,
        first_seen_at, changed_at, decided_at, decided_by) VALUES (@teamId, @service, @tool, @status, @pinnedHash, @pinnedDefinition, @pendingHash,
        @pendingDefinition, @firstSeenAt, @changedAt, @decidedAt, @decidedBy)
      ON CONFLICT (team_id, service, tool) DO UPDATE SET status = excluded.status, pinned_hash = excluded.pinned_hash,
        pinned_definition = excluded.pinned_definition, pending_hash = excluded.pending_hash, pending_definition = excluded.pending_definition,
        changed_at = excluded.changed_at, decided_at = excluded.decided_at, decided_by = excluded.decided_by`);
    return writeTx(
      this.db,
      () => {
        const out = change(this.readService(teamId, service));
        for (const w of out.writes) {
          // The change function is ours, but a row of another team or service here would be a bug that leaks pins.
          if (w.teamId !== teamId || w.service !== service) throw new Error("a pin write outside its team and service");
          upsert.run(w);
        }
        this.writeAudit(out.audit);
        return out.value;
      },
      this.wait,
    );
  }

  private readService(teamId: string, service: string): ToolPin[] {
    return this.db.prepare("SELECT * FROM tool_pins WHERE team_id = ? AND service = ? ORDER BY tool").all(teamId, service).map(toPin);
  }
}
