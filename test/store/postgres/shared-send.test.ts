import { describe, expect, it } from "vitest";
import { SHARED_SEND_MAX } from "../../../src/store/postgres/shared-send.js";
import { postgresStores } from "../../support/postgres-stores.js";

// Statements sent together outside a transaction share one pooled client (shared-send.ts): one
// server backend answers them, in order, each with its own result or error and its own commit.
// A real PostgreSQL server, started by the test.

const pg = postgresStores();
const backend = "SELECT pg_backend_pid() AS pid, $1::int AS i";

describe("statements sent together share one client", () => {
  it("independent statements issued at once are answered by one backend, each with its own result", async () => {
    const s = await pg.store(await pg.schema());
    const rows = await Promise.all(
      Array.from({ length: 6 }, (_, i) => s.db.query<{ pid: number; i: number }>(backend, [i])),
    );
    expect(rows.map((r) => r.rows[0]!.i)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(new Set(rows.map((r) => r.rows[0]!.pid)).size).toBe(1);
  });

  it("a failing statement fails alone: the ones beside it answer, and a write beside it commits", async () => {
    const s = await pg.store(await pg.schema());
    await s.db.query("CREATE TABLE shared_probe (k text PRIMARY KEY)");
    const [ok, bad, write, after] = await Promise.allSettled([
      s.db.query<{ i: number }>("SELECT 1 AS i"),
      s.db.query("SELECT * FROM no_such_table"),
      s.db.query("INSERT INTO shared_probe (k) VALUES ('a')"),
      s.db.query<{ i: number }>("SELECT 2 AS i"),
    ]);
    expect(ok.status === "fulfilled" && ok.value.rows[0]!.i).toBe(1);
    expect(bad.status).toBe("rejected");
    expect(write.status).toBe("fulfilled");
    expect(after.status === "fulfilled" && after.value.rows[0]!.i).toBe(2);
    // Committed on its own: another client of the pool sees it.
    const seen = await s.db.tx((q) => q.query<{ n: number }>("SELECT count(*)::int AS n FROM shared_probe"));
    expect(seen.rows[0]!.n).toBe(1);
  });

  it("at most SHARED_SEND_MAX statements share a client; the rest go on others", async () => {
    const s = await pg.store(await pg.schema());
    const n = SHARED_SEND_MAX * 2 + 1;
    const rows = await Promise.all(
      Array.from({ length: n }, (_, i) => s.db.query<{ pid: number; i: number }>(backend, [i])),
    );
    const byBackend = new Map<number, number>();
    for (const r of rows) byBackend.set(r.rows[0]!.pid, (byBackend.get(r.rows[0]!.pid) ?? 0) + 1);
    expect(byBackend.size).toBeGreaterThanOrEqual(3);
    for (const count of byBackend.values()) expect(count).toBeLessThanOrEqual(SHARED_SEND_MAX);
    expect(rows.map((r) => r.rows[0]!.i)).toEqual(Array.from({ length: n }, (_, i) => i));
  });

  it("statements issued apart each give their client back: three times the pool's size run one after another", async () => {
    const s = await pg.store(await pg.schema());
    // A client kept after its batch would exhaust the pool of 10 well before the 30th statement.
    for (let i = 0; i < 30; i++) expect((await s.db.query<{ i: number }>(backend, [i])).rows[0]!.i).toBe(i);
    expect(s.db.pool.totalCount).toBeLessThanOrEqual(10);
  });
});
