import type { Statement } from "better-sqlite3";
import { LRUCache } from "lru-cache";
import type { AuditEvent } from "../../audit/event.js";
import type { ToolPin } from "../records.js";
import { toPin } from "../sql/pin-rows.js";
import type { PinWrite, ToolPinRepo } from "../store.js";
import { makeAuditWriter } from "./audit-repo.js";
import { type Db, DEFAULT_LOCK_WAIT, type LockWait, writeTx } from "./db.js";

/** Most pins remembered for the call path's two reads per call (the gate and the check on the vendor). */
export const PIN_MEMO_MAX = 4_096;
/**
 * SQLite tool pins; `update` runs the caller's pure change inside one BEGIN IMMEDIATE transaction.
 * `get` is remembered (every local write clears it): it is read twice per mcp_call. A write by
 * another process (the CLI accepting or rejecting a change) is noticed through `PRAGMA
 * data_version`, read at most once per event-loop turn, so the next call sees it.
 */
export class SqliteToolPinRepo implements ToolPinRepo {
  private readonly writeAudit: (events: readonly AuditEvent[]) => void;
  private readonly memo = new LRUCache<string, { pin: ToolPin | undefined }>({ max: PIN_MEMO_MAX });
  private seenVersion = -1;
  /** Set once data_version was read in this event-loop turn; cleared by setImmediate. */
  private checkedThisTurn = false;

  constructor(
    private readonly db: Db,
    private readonly wait: LockWait = DEFAULT_LOCK_WAIT,
  ) {
    this.writeAudit = makeAuditWriter(db);
    // Prepared once (a prepare per call cost more than the read), and like every other statement, so the bench's statement count includes it.
    this.version = db.prepare("PRAGMA data_version").pluck();
  }

  private readonly version: Statement<unknown[]>;

  async get(teamId: string, service: string, tool: string): Promise<ToolPin | undefined> {
    this.revalidate();
    const key = JSON.stringify([teamId, service, tool]);
    const hit = this.memo.get(key);
    if (hit) return hit.pin;
    const r = this.db
      .prepare("SELECT * FROM tool_pins WHERE team_id = ? AND service = ? AND tool = ?")
      .get(teamId, service, tool);
    const pin = r === undefined ? undefined : toPin(r);
    this.memo.set(key, { pin });
    return pin;
  }

  /** Forgets every remembered pin when another connection committed to the file since the last look. */
  private revalidate(): void {
    if (this.checkedThisTurn) return;
    this.checkedThisTurn = true;
    setImmediate(() => (this.checkedThisTurn = false));
    const v = this.version.get() as number;
    if (v !== this.seenVersion) {
      this.seenVersion = v;
      this.memo.clear();
    }
  }

  async list(teamId: string, service: string): Promise<ToolPin[]> {
    return this.readService(teamId, service);
  }

  async undecided(f: { teamId?: string; service?: string; tool?: string; limit: number }): Promise<ToolPin[]> {
    const where = ["status <> 'pinned'"];
    const params: (string | number)[] = [];
    if (f.teamId !== undefined) {
      where.push("team_id = ?");
      params.push(f.teamId);
    }
    if (f.service !== undefined) {
      where.push("service = ?");
      params.push(f.service);
    }
    if (f.tool !== undefined) {
      where.push("tool = ?");
      params.push(f.tool);
    }
    params.push(Math.max(0, Math.floor(f.limit)));
    return this.db
      .prepare(
        `SELECT * FROM tool_pins WHERE ${where.join(" AND ")} ORDER BY changed_at DESC, team_id, service, tool LIMIT ?`,
      )
      .all(...params)
      .map(toPin);
  }

  async update<T>(teamId: string, service: string, change: (current: readonly ToolPin[]) => PinWrite<T>): Promise<T> {
    const upsert =
      this.db.prepare(`INSERT INTO tool_pins (team_id, service, tool, status, pinned_hash, pinned_definition, pending_hash, pending_definition,
        first_seen_at, changed_at, decided_at, decided_by) VALUES (@teamId, @service, @tool, @status, @pinnedHash, @pinnedDefinition, @pendingHash,
        @pendingDefinition, @firstSeenAt, @changedAt, @decidedAt, @decidedBy)
      ON CONFLICT (team_id, service, tool) DO UPDATE SET status = excluded.status, pinned_hash = excluded.pinned_hash,
        pinned_definition = excluded.pinned_definition, pending_hash = excluded.pending_hash, pending_definition = excluded.pending_definition,
        changed_at = excluded.changed_at, decided_at = excluded.decided_at, decided_by = excluded.decided_by`);
    return writeTx(
      this.db,
      () => {
        this.memo.clear();
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
    return this.db
      .prepare("SELECT * FROM tool_pins WHERE team_id = ? AND service = ? ORDER BY tool")
      .all(teamId, service)
      .map(toPin);
  }
}
