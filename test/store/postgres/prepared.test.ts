import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { PgDb } from "../../../src/store/postgres/pg-db.js";
import { PREPARED_MAX, PreparedNames } from "../../../src/store/postgres/prepared.js";
import { type PgCluster, startPostgres } from "../../support/postgres.js";

// Named (prepared) statements and the pipelined BEGIN of PgDb: the names are bounded, a plan made
// stale by another replica's migration falls back to an unnamed statement, a transaction is still
// all or nothing.

let cluster: PgCluster;
let databaseUrl: string;
const opened: PgDb[] = [];
beforeAll(async () => {
  cluster = await startPostgres();
  databaseUrl = await cluster.createDatabase();
});
afterEach(async () => {
  for (const db of opened.splice(0)) await db.close();
});
afterAll(async () => {
  await cluster?.stop();
});

/** A store handle on a fresh schema with one pooled connection (so its prepared statements can be listed). */
async function oneConnection(url?: string): Promise<PgDb> {
  const db = new PgDb({ url: url ?? (await cluster.createSchema(databaseUrl)), maxConnections: 1 });
  opened.push(db);
  return db;
}

describe("PreparedNames", () => {
  it("names the first PREPARED_MAX texts, each once and never two texts alike; later texts go unnamed", () => {
    const p = new PreparedNames();
    const names = new Set<string>();
    for (let i = 0; i < PREPARED_MAX + 50; i++) {
      const c = p.config(`SELECT ${i}`, []);
      if (i < PREPARED_MAX) names.add(c.name!);
      else expect(c.name).toBeUndefined();
      expect(p.config(`SELECT ${i}`, []).name).toBe(c.name);
    }
    expect(names.size).toBe(PREPARED_MAX);
    expect(p.size).toBe(PREPARED_MAX);
  });

  it("a retired text is sent unnamed from then on and its name is never given to another text", () => {
    const p = new PreparedNames();
    const first = p.config("SELECT 1", []).name;
    p.retire("SELECT 1");
    expect(p.config("SELECT 1", []).name).toBeUndefined();
    expect(p.config("SELECT 2", []).name).not.toBe(first);
    expect(p.size).toBe(1);
  });
});

describe("PgDb statements", () => {
  it("sends a repeated statement as one prepared statement on its connection", async () => {
    const db = await oneConnection();
    for (let i = 0; i < 3; i++) expect((await db.query("SELECT $1::int + 1 AS n", [i])).rows[0]).toEqual({ n: i + 1 });
    const listed = await db.query<{ statement: string }>("SELECT statement FROM pg_prepared_statements");
    expect(listed.rows.filter((r) => r.statement === "SELECT $1::int + 1 AS n")).toHaveLength(1);
  });

  it("a table changed under a prepared SELECT * (a newer replica migrated) answers unnamed instead of failing", async () => {
    const db = await oneConnection();
    await db.query("CREATE TABLE t (a int)");
    await db.query("INSERT INTO t VALUES (1)");
    expect((await db.query("SELECT * FROM t")).rows).toEqual([{ a: 1 }]);
    await db.query("ALTER TABLE t ADD COLUMN b int DEFAULT 2");
    expect((await db.query("SELECT * FROM t")).rows).toEqual([{ a: 1, b: 2 }]);
    // Inside a transaction the stale plan fails it once; the retry runs unnamed.
    await db.query("SELECT * FROM t WHERE a = $1", [1]);
    await db.query("ALTER TABLE t ADD COLUMN c int DEFAULT 3");
    await expect(db.tx((q) => q.query("SELECT * FROM t WHERE a = $1", [1]))).rejects.toThrow(/cached plan/);
    expect((await db.tx((q) => q.query("SELECT * FROM t WHERE a = $1", [1]))).rows).toEqual([{ a: 1, b: 2, c: 3 }]);
  });

  it("a transaction whose BEGIN is pipelined is still all or nothing, and commits what it wrote", async () => {
    const url = await cluster.createSchema(databaseUrl);
    const db = await oneConnection(url);
    await db.query("CREATE TABLE w (a int PRIMARY KEY)");
    await expect(
      db.tx(async (q) => {
        await q.query("INSERT INTO w VALUES (1)");
        await q.query("INSERT INTO w VALUES (1)");
      }),
    ).rejects.toThrow(/duplicate key/);
    await expect(
      db.tx(async (q) => {
        await q.query("INSERT INTO w VALUES (2)");
        throw new Error("the caller changed its mind");
      }),
    ).rejects.toThrow(/changed its mind/);
    expect((await db.query("SELECT count(*)::int AS n FROM w")).rows[0]).toEqual({ n: 0 });
    const before = db.counts.transactions;
    await db.tx(async (q) => {
      await q.query("INSERT INTO w VALUES (3)");
      await q.query("INSERT INTO w VALUES (4)");
    });
    expect(db.counts.transactions).toBe(before + 1);
    // Committed (another connection sees it), and no transaction is left open on the pooled connection.
    const other = await oneConnection(url);
    expect((await other.query("SELECT a FROM w ORDER BY a")).rows).toEqual([{ a: 3 }, { a: 4 }]);
    const open = await other.query(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE state LIKE 'idle in transaction%' AND pid <> pg_backend_pid()",
    );
    expect(open.rows[0]).toEqual({ n: 0 });
  });
});
