import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { StoreError } from "../../../src/store/errors.js";
import { migratePg, readPgMigrations } from "../../../src/store/postgres/migrator.js";
import { PgDb } from "../../../src/store/postgres/pg-db.js";
import { connectPostgresStore, openPostgresStore } from "../../../src/store/postgres/pg-store.js";
import { TempDirs } from "../../support/foundation.js";
import { type PgCluster, postgresBinDir, startPostgres } from "../../support/postgres.js";

// What only the PostgreSQL adapter has: migrations under an advisory lock (replicas starting
// together), an ordinary role, TLS from the URL, advisory locks and LISTEN/NOTIFY for replicas.

let cluster: PgCluster;
let databaseUrl: string;
const tmp = new TempDirs();
const opened: PgDb[] = [];
beforeAll(async () => {
  cluster = await startPostgres();
  databaseUrl = await cluster.createDatabase();
});
afterEach(async () => {
  for (const db of opened.splice(0)) await db.close();
  tmp.cleanup();
});
afterAll(async () => {
  await cluster?.stop();
});

async function freshDb(): Promise<PgDb> {
  const db = new PgDb({ url: await cluster.createSchema(databaseUrl) });
  opened.push(db);
  return db;
}

function migrationsDir(files: Record<string, string>): string {
  const dir = path.join(tmp.make(), "migrations");
  mkdirSync(dir);
  for (const [name, sql] of Object.entries(files)) writeFileSync(path.join(dir, name), sql);
  return dir;
}

async function versions(db: PgDb): Promise<number[]> {
  return (await db.query<{ version: number }>("SELECT version FROM schema_migrations ORDER BY version")).rows.map(
    (r) => r.version,
  );
}

async function storeError(p: Promise<unknown>): Promise<StoreError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(StoreError);
  return e as StoreError;
}

describe("PostgreSQL migrations", () => {
  it("two replicas migrating at once apply each migration once (the advisory lock serialises them)", async () => {
    const url = await cluster.createSchema(databaseUrl);
    const a = new PgDb({ url });
    const b = new PgDb({ url });
    opened.push(a, b);
    // Slow enough that both runs overlap: without the lock, both would try to create the tables.
    const slow = migrationsDir({
      "0001_first.sql": "CREATE TABLE t1 (a INTEGER PRIMARY KEY); SELECT pg_sleep(0.3);",
      "0002_second.sql": "CREATE TABLE t2 (b INTEGER REFERENCES t1 (a));",
    });
    const [ra, rb] = await Promise.all([migratePg(a, readPgMigrations(slow)), migratePg(b, readPgMigrations(slow))]);
    expect([ra.applied, rb.applied].sort((x, y) => y.length - x.length)).toEqual([[1, 2], []]);
    expect(ra.current).toBe(2);
    expect(rb.current).toBe(2);
    expect(await versions(a)).toEqual([1, 2]);
  });

  it("refuses a newer schema and a changed applied migration, and leaves nothing of a failed one", async () => {
    const db = await freshDb();
    const one = { "0001_first.sql": "CREATE TABLE t1 (a INTEGER);" };
    await migratePg(db, readPgMigrations(migrationsDir(one)));
    expect((await storeError(migratePg(db, []))).code).toBe("newer_schema");
    expect(
      (
        await storeError(
          migratePg(db, readPgMigrations(migrationsDir({ "0001_first.sql": "CREATE TABLE t1 (a TEXT);" }))),
        )
      ).code,
    ).toBe("migration_modified");
    const broken = { ...one, "0002_broken.sql": "CREATE TABLE t2 (a INTEGER); INSERT INTO nowhere VALUES (1);" };
    expect((await storeError(migratePg(db, readPgMigrations(migrationsDir(broken))))).code).toBe("migration_failed");
    expect(await versions(db)).toEqual([1]);
    expect((await db.query("SELECT to_regclass('t2') AS t")).rows[0]).toEqual({ t: null });
  });

  it("applies the real schema as the ordinary role that owns the database (no superuser, no extension)", async () => {
    const { store, migrations } = await openPostgresStore({ url: await cluster.createSchema(databaseUrl) });
    try {
      expect(migrations.applied).toEqual(readPgMigrations().map((m) => m.version));
      const role = (
        await store.db.query<{ super: boolean; owner: string }>(
          "SELECT rolsuper AS super, pg_get_userbyid(d.datdba) AS owner FROM pg_roles r, pg_database d WHERE r.rolname = current_user AND d.datname = current_database()",
        )
      ).rows[0];
      expect(role).toEqual({ super: false, owner: cluster.role });
      expect((await store.db.query("SELECT extname FROM pg_extension WHERE extname <> 'plpgsql'")).rows).toEqual([]);
      expect(await store.ping()).toBe(true);
    } finally {
      await store.close();
    }
  });

  it("a store whose migrations fail refuses every query with their error (fail closed)", async () => {
    const url = await cluster.createSchema(databaseUrl);
    const db = new PgDb({ url });
    opened.push(db);
    await migratePg(db, readPgMigrations(migrationsDir({ "0099_future.sql": "SELECT 1;" })));
    const { store, migrations } = connectPostgresStore({ url });
    try {
      expect((await storeError(migrations)).code).toBe("newer_schema");
      await expect(store.connections.list({})).rejects.toThrow(/newer than this slaude-connect knows/);
      expect(await store.ping()).toBe(false);
    } finally {
      await store.close();
    }
    await expect(store.audit.count()).rejects.toThrow(/not open/);
  });
});

describe("the test PostgreSQL", () => {
  it("without Debian's server binaries, fails with the fix instead of skipping", () => {
    expect(() => postgresBinDir(path.join(tmp.make(), "no-postgresql"))).toThrow(/apt-get install -y postgresql/);
    expect(postgresBinDir()).toMatch(/^\/usr\/lib\/postgresql\/\d+\/bin$/);
  });
});

describe("PostgreSQL connection", () => {
  it("TLS follows the URL: sslmode=require to a server without TLS is refused, not downgraded", async () => {
    const db = new PgDb({ url: `${databaseUrl}?sslmode=require` });
    opened.push(db);
    await expect(db.query("SELECT 1")).rejects.toThrow(/does not support SSL/);
    const plain = new PgDb({ url: `${databaseUrl}?sslmode=disable` });
    opened.push(plain);
    expect((await plain.query<{ ok: number }>("SELECT 1 AS ok")).rows).toEqual([{ ok: 1 }]);
  });

  it("a wrong password is refused (password auth over TCP, scram)", async () => {
    const db = new PgDb({ url: databaseUrl.replace(`:${cluster.password}@`, ":wrong@") });
    opened.push(db);
    await expect(db.query("SELECT 1")).rejects.toThrow(/password authentication failed/);
  });

  it("a held advisory lock is exclusive across connections and freed by release", async () => {
    const a = await freshDb();
    const b = await freshDb();
    const held = await a.tryHoldLock("job:reaper");
    expect(held).toBeDefined();
    expect(await b.tryHoldLock("job:reaper")).toBeUndefined();
    await held!.release();
    const next = await b.tryHoldLock("job:reaper");
    expect(next).toBeDefined();
    await next!.release();
  });

  it("a process's held locks share one connection, and failed tries open none; losing it loses them all, once each", async () => {
    const a = await freshDb();
    const b = await freshDb();
    const lost: string[] = [];
    const names = ["job:ttl", "job:results", "job:turns", "replica:http://a"];
    for (const n of names) expect(await a.tryHoldLock(n, () => lost.push(n))).toBeDefined();
    expect(await a.tryHoldLock("job:ttl")).toBeUndefined(); // held here: not re-entrant
    const holders = async () =>
      (await cluster.superQuery("SELECT DISTINCT pid FROM pg_locks WHERE locktype = 'advisory' AND granted")).rows.map(
        (r) => Number(r.pid),
      );
    const aPids = await holders();
    expect(aPids).toHaveLength(1);
    // A replica that leads nothing asks every lock each tick: that costs statements, not connections.
    await b.tryHoldLock("job:warmup").then((l) => l?.release());
    const backends = async () =>
      Number(
        (
          await cluster.superQuery(
            "SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = 'slaude-connect'",
          )
        ).rows[0]!.n,
      );
    const before = await backends();
    for (let i = 0; i < 20; i++) for (const n of names) expect(await b.tryHoldLock(n)).toBeUndefined();
    expect(await backends()).toBe(before);
    expect(await b.lockHeld("replica:http://a")).toBe(true);
    expect(await b.lockHeld("replica:http://nobody")).toBe(false);
    expect(await b.tryHoldLock("replica:http://nobody")).toBeDefined(); // lockHeld gave it back
    // The server ends A's lock session: every lock is lost at once, each reported once, and free for B.
    await cluster.superQuery(`SELECT pg_terminate_backend(${aPids[0]})`);
    await expect.poll(() => lost.length, { timeout: 10_000 }).toBe(names.length);
    expect([...lost].sort()).toEqual([...names].sort());
    for (const n of names) expect(await b.tryHoldLock(n)).toBeDefined();
    // A reconnects on its next try; the lock B took stays B's.
    expect(await a.tryHoldLock("job:ttl")).toBeUndefined();
    expect(await a.tryHoldLock("job:other")).toBeDefined();
  });

  it("LISTEN/NOTIFY: a notification sent in a transaction arrives once it commits, not before", async () => {
    const a = await freshDb();
    const b = await freshDb();
    const got: string[] = [];
    const sub = await b.listen("slaude_test", (p) => got.push(p));
    try {
      await a
        .tx(async (q) => {
          await a.notify("slaude_test", "first", q);
          await a.notify("slaude_test", "rolled back", q);
          throw new Error("abort");
        })
        .catch(() => {});
      await a.notify("slaude_test", "committed");
      await expect.poll(() => got, { timeout: 10_000 }).toEqual(["committed"]);
    } finally {
      await sub.close();
    }
  });

  it("a lock wait past lock_timeout fails as StoreError busy", async () => {
    const url = await cluster.createSchema(databaseUrl);
    const holder = new PgDb({ url });
    const waiter = new PgDb({ url, lockWaitMs: 200 });
    opened.push(holder, waiter);
    await holder.query("CREATE TABLE t (a INTEGER)");
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    const holding = holder.tx(async (q) => {
      await q.query("LOCK TABLE t IN ACCESS EXCLUSIVE MODE");
      locked();
      await released;
    });
    await isLocked;
    const e = await storeError(waiter.query("SELECT * FROM t"));
    expect(e.code).toBe("busy");
    release();
    await holding;
  });
});
