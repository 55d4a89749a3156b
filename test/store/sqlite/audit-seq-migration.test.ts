import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { AuditEvent } from "../../../src/audit/event.js";
import { SqliteAuditRepo } from "../../../src/store/sqlite/audit-repo.js";
import { type Db, openDatabase } from "../../../src/store/sqlite/db.js";
import { migrate, readMigrations } from "../../../src/store/sqlite/migrator.js";
import { TempDirs } from "../../support/foundation.js";

// Migration 0009 rebuilds `audit` without AUTOINCREMENT, so a commit of audit rows no longer
// rewrites `sqlite_sequence`. What must hold across it: every row and its seq, seq still
// increasing past the largest, the append-only triggers, and the indexes the readers use.
// Real SQLite file, the real migrations.

const tmp = new TempDirs();
const opened: Db[] = [];
afterEach(() => {
  for (const db of opened.splice(0)) if (db.open) db.close();
  tmp.cleanup();
});

const row = (callId: string, connectionId: string): AuditEvent => ({
  at: 1_700_000_000_000,
  event: "call_started",
  callId,
  connectionId,
  service: "svc",
  tool: "read_thing",
});

function dbAt(version: number): Db {
  const db = openDatabase(path.join(tmp.make(), "m.db"));
  opened.push(db);
  migrate(
    db,
    readMigrations().filter((m) => m.version <= version),
  );
  return db;
}

const schemaOf = (db: Db) => db.prepare("SELECT sql FROM sqlite_master WHERE name = 'audit'").pluck().get() as string;
const sequenceRows = (db: Db) =>
  db.prepare("SELECT count(*) FROM sqlite_sequence WHERE name = 'audit'").pluck().get() as number;
const plan = (db: Db, sql: string, ...params: unknown[]) =>
  (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]).map((r) => r.detail).join("; ");

describe("audit seq without AUTOINCREMENT (migration 0009)", () => {
  it("keeps every row and its seq, continues past the largest, and stops writing sqlite_sequence", async () => {
    const db = dbAt(8);
    const before = new SqliteAuditRepo(db);
    for (let i = 0; i < 5; i++) await before.append([row(`call_${i}`, `conn_${i % 2}`)]);
    expect(schemaOf(db)).toContain("AUTOINCREMENT");
    expect(sequenceRows(db)).toBe(1);
    const rowsBefore = db.prepare("SELECT * FROM audit ORDER BY seq").all();

    migrate(db);
    expect(schemaOf(db)).not.toContain("AUTOINCREMENT");
    expect(db.prepare("SELECT * FROM audit ORDER BY seq").all()).toEqual(rowsBefore);
    expect(sequenceRows(db)).toBe(0);

    const after = new SqliteAuditRepo(db);
    await after.append([row("call_5", "conn_1")]);
    await after.append([row("call_6", "conn_0"), row("call_7", "conn_1")]);
    const seqs = (await after.query({})).map((r) => r.seq);
    expect(seqs).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(sequenceRows(db)).toBe(0);
  });

  it("keeps the table append-only", async () => {
    const db = dbAt(9);
    await new SqliteAuditRepo(db).append([row("call_a", "conn_a")]);
    expect(() => db.prepare("UPDATE audit SET tool = 'x'").run()).toThrow(/append-only/);
    expect(() => db.prepare("DELETE FROM audit").run()).toThrow(/append-only/);
    expect(db.prepare("SELECT count(*) FROM audit").pluck().get()).toBe(1);
  });

  it("keeps the indexes the readers' queries use", () => {
    const db = dbAt(9);
    // `audit --since/--until` and callSamples; `audit --connection` and the revoke notice; `audit --call`.
    expect(plan(db, "SELECT * FROM audit WHERE at >= ? AND at < ? ORDER BY seq", 1, 2)).toContain("audit_by_time");
    expect(
      plan(
        db,
        "SELECT at FROM audit WHERE at >= ? AND at < ? AND event IN ('call', 'call_denied') ORDER BY at DESC, seq DESC",
        1,
        2,
      ),
    ).toContain("audit_by_time");
    expect(plan(db, "SELECT * FROM audit WHERE connection_id = ? ORDER BY seq", "c")).toContain("audit_by_connection");
    expect(plan(db, "SELECT * FROM audit WHERE call_id = ? ORDER BY seq", "c")).toContain("audit_by_call");
    // The tails read after a seq: the rowid itself.
    expect(plan(db, "SELECT * FROM audit WHERE seq > ? ORDER BY seq LIMIT 500", 0)).toMatch(
      /USING INTEGER PRIMARY KEY/,
    );
  });
});
