import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { StoreError } from "../../../src/store/errors.js";
import { type Db, openDatabase } from "../../../src/store/sqlite/db.js";
import { migrate, readMigrations } from "../../../src/store/sqlite/migrator.js";
import { TempDirs } from "../../support/foundation.js";

const tmp = new TempDirs();
const opened: Db[] = [];
afterEach(() => {
  for (const db of opened.splice(0)) if (db.open) db.close();
  tmp.cleanup();
});

function freshDb(): Db {
  const db = openDatabase(path.join(tmp.make(), "m.db"));
  opened.push(db);
  return db;
}

function migrationsDir(files: Record<string, string>): string {
  const dir = path.join(tmp.make(), "migrations");
  mkdirSync(dir);
  for (const [name, sql] of Object.entries(files)) writeFileSync(path.join(dir, name), sql);
  return dir;
}

function tables(db: Db): string[] {
  return (
    db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
      .all() as { name: string }[]
  ).map((r) => r.name);
}

function records(db: Db): { version: number; name: string; applied_at: number }[] {
  return db.prepare("SELECT version, name, applied_at FROM schema_migrations ORDER BY version").all() as {
    version: number;
    name: string;
    applied_at: number;
  }[];
}

function storeError(fn: () => unknown): StoreError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(StoreError);
    return e as StoreError;
  }
  throw new Error("expected a StoreError");
}

// Each migration depends on the previous one, so applying them out of order would fail.
const THREE = {
  "0002_second.sql": "ALTER TABLE t1 ADD COLUMN b TEXT; INSERT INTO log (step) VALUES (2);",
  "0003_third.sql":
    "CREATE TABLE t3 (x INTEGER REFERENCES t1 (a)); UPDATE t1 SET b = 'three'; INSERT INTO log (step) VALUES (3);",
  "0001_first.sql":
    "CREATE TABLE t1 (a INTEGER PRIMARY KEY); CREATE TABLE log (seq INTEGER PRIMARY KEY, step INTEGER); INSERT INTO log (step) VALUES (1);",
  "README.md": "not a migration",
  "0004-bad-name.sql": "this is not picked up",
};

describe("readMigrations", () => {
  it("reads NNNN_name.sql files in version order and ignores other files", () => {
    const ms = readMigrations(migrationsDir(THREE));
    expect(ms.map((m) => [m.version, m.name])).toEqual([
      [1, "first"],
      [2, "second"],
      [3, "third"],
    ]);
    expect(ms[0]!.checksum).toMatch(/^[0-9a-f]{64}$/);
  });

  it("refuses two migrations with the same version", () => {
    const dir = migrationsDir({ "0001_a.sql": "SELECT 1;", "0001_b.sql": "SELECT 2;" });
    expect(storeError(() => readMigrations(dir)).message).toContain("version 1");
  });

  it("finds the repository's own migrations, starting at 0001", () => {
    const ms = readMigrations();
    expect(ms[0]).toMatchObject({ version: 1, name: "init" });
    for (const [i, m] of ms.entries()) expect(m.version).toBe(i + 1);
  });
});

describe("migrate", () => {
  it("applies migrations in order and records each one", () => {
    const db = freshDb();
    let t = 1000;
    const report = migrate(db, readMigrations(migrationsDir(THREE)), () => t++);
    expect(report).toEqual({ applied: [1, 2, 3], current: 3 });
    expect((db.prepare("SELECT step FROM log ORDER BY seq").all() as { step: number }[]).map((r) => r.step)).toEqual([
      1, 2, 3,
    ]);
    expect(records(db)).toEqual([
      { version: 1, name: "first", applied_at: 1000 },
      { version: 2, name: "second", applied_at: 1001 },
      { version: 3, name: "third", applied_at: 1002 },
    ]);
    expect(tables(db)).toEqual(["log", "schema_migrations", "t1", "t3"]);
  });

  it("is idempotent: a second run applies nothing", () => {
    const db = freshDb();
    const ms = readMigrations(migrationsDir(THREE));
    migrate(db, ms);
    const before = records(db);
    expect(migrate(db, ms)).toEqual({ applied: [], current: 3 });
    expect(records(db)).toEqual(before);
    expect((db.prepare("SELECT count(*) AS n FROM log").get() as { n: number }).n).toBe(3);
  });

  it("applies only the pending ones after an upgrade", () => {
    const db = freshDb();
    const { "0003_third.sql": third, ...firstTwo } = THREE;
    migrate(db, readMigrations(migrationsDir(firstTwo)));
    expect(records(db).map((r) => r.version)).toEqual([1, 2]);
    expect(migrate(db, readMigrations(migrationsDir({ ...firstTwo, "0003_third.sql": third })))).toEqual({
      applied: [3],
      current: 3,
    });
  });

  it("leaves nothing half-applied when a migration fails", () => {
    const db = freshDb();
    const dir = migrationsDir({
      "0001_first.sql": THREE["0001_first.sql"],
      // Creates a table, then fails: the table must not survive.
      "0002_broken.sql":
        "CREATE TABLE t2 (a INTEGER); INSERT INTO t2 VALUES (1); INSERT INTO no_such_table VALUES (1);",
      "0003_third.sql": "CREATE TABLE t3 (a INTEGER);",
    });
    const err = storeError(() => migrate(db, readMigrations(dir)));
    expect(err.code).toBe("migration_failed");
    expect(err.message).toContain("0002_broken.sql");
    expect(err.message).toContain("no_such_table");
    expect(tables(db)).toEqual(["log", "schema_migrations", "t1"]);
    expect(records(db).map((r) => r.version)).toEqual([1]);
    expect(db.inTransaction).toBe(false);
  });

  it("refuses a database whose schema is newer than the known migrations", () => {
    const db = freshDb();
    const ms = readMigrations(migrationsDir(THREE));
    migrate(db, ms);
    db.prepare(
      "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (7, 'from_the_future', 'x', 0)",
    ).run();
    const err = storeError(() => migrate(db, ms));
    expect(err.code).toBe("newer_schema");
    expect(err.message).toContain("7");
    expect(err.message).toContain("from_the_future");
    expect(err.message).toMatch(/newer than this slaude-connect knows \(3\)/);
    expect(err.message).toMatch(/upgrade/);
  });

  it("refuses an applied migration whose file has changed", () => {
    const db = freshDb();
    const dir = migrationsDir(THREE);
    migrate(db, readMigrations(dir));
    writeFileSync(path.join(dir, "0002_second.sql"), `${THREE["0002_second.sql"]}\n-- edited later\n`);
    const err = storeError(() => migrate(db, readMigrations(dir)));
    expect(err.code).toBe("migration_modified");
    expect(err.message).toContain("0002_second.sql");
    expect(err.message).toContain("forward-only");
  });

  it("applies the real schema to a fresh database", () => {
    const db = freshDb();
    const report = migrate(db);
    expect(report.applied[0]).toBe(1);
    expect(tables(db)).toEqual(
      expect.arrayContaining([
        "connections",
        "grants",
        "approvals",
        "audit",
        "login_sessions",
        "tool_metadata",
        "schema_migrations",
      ]),
    );
    expect(migrate(db).applied).toEqual([]);
  });
});
