import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { StoreError } from "../../../src/store/errors.js";
import { mapPgError } from "../../../src/store/postgres/pg-common.js";
import { PgDb } from "../../../src/store/postgres/pg-db.js";
import { type PgCluster, startPostgres } from "../../support/postgres.js";

// Issue 21, item 9: a PostgreSQL restart must not end the process whose transaction it cuts, and
// what the store says while the server is away is one code, `unavailable`, not a raw socket error.

vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });
const VICTIM = fileURLToPath(new URL("../../fixtures/pg-tx-victim.ts", import.meta.url));

let cluster: PgCluster;
let databaseUrl: string;
beforeAll(async () => {
  cluster = await startPostgres();
  databaseUrl = await cluster.createDatabase();
});
afterAll(async () => {
  await cluster?.stop();
});

async function inFlight(marker: string): Promise<number> {
  const r = await cluster.superQuery(
    `SELECT count(*)::int AS n FROM pg_stat_activity WHERE query LIKE '%AS ${marker}%' AND state = 'active' AND pid <> pg_backend_pid()`,
  );
  return (r.rows[0] as { n: number }).n;
}

describe("a PostgreSQL restart under an open transaction", () => {
  it("the process holding a transaction and a session lock lives: both fail as unavailable, and the pool reconnects", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", VICTIM, databaseUrl], {
      stdio: ["ignore", "pipe", "pipe"],
      shell: false,
    });
    let out = "";
    let err = "";
    child.stdout!.setEncoding("utf8").on("data", (d: string) => (out += d));
    child.stderr!.setEncoding("utf8").on("data", (d: string) => (err += d));
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    try {
      // The event that proves both statements run on checked-out clients: the server shows them active.
      await vi.waitFor(async () => expect((await inFlight("victim_tx")) + (await inFlight("victim_lock"))).toBe(2), {
        timeout: 60_000,
        interval: 50,
      });
      await cluster.restart();
      const code = await exited;
      expect(err).not.toContain("Unhandled 'error' event");
      expect(code, `stdout:\n${out}\nstderr:\n${err}`).toBe(0);
      expect(out).toContain(JSON.stringify({ tx: "unavailable", lock: "unavailable" }));
      expect(out).toContain("reconnected");
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
    }
  });

  it("while the server is down every statement fails as StoreError unavailable (connect refused), and works again once it is back", async () => {
    const db = new PgDb({ url: databaseUrl });
    try {
      expect((await db.query<{ ok: number }>("SELECT 1 AS ok")).rows[0]?.ok).toBe(1);
      const failures: unknown[] = [];
      await cluster.restart(async () => {
        const statements = [
          () => db.query("SELECT 1"),
          () => db.tx((q) => q.query("SELECT 1")),
          () => db.withSessionLock("down", (q) => q.query("SELECT 1")),
        ];
        for (const run of statements)
          failures.push(
            await run().then(
              () => "answered",
              (e: unknown) => e,
            ),
          );
      });
      for (const f of failures) {
        expect(f).toBeInstanceOf(StoreError);
        expect((f as StoreError).code).toBe("unavailable");
        // The code, never the address (or anything else of the URL).
        expect((f as StoreError).message).not.toContain(String(cluster.port));
      }
      await vi.waitFor(async () => expect((await db.query<{ ok: number }>("SELECT 1 AS ok")).rows[0]?.ok).toBe(1), {
        timeout: 30_000,
        interval: 100,
      });
      expect(await db.tx(async (q) => (await q.query<{ n: number }>("SELECT 2 AS n")).rows[0]?.n)).toBe(2);
    } finally {
      await db.close();
    }
  });
});

describe("mapPgError", () => {
  const err = (code: string | undefined, message: string): Error =>
    Object.assign(new Error(message), code === undefined ? {} : { code });
  it.each([
    ["ECONNREFUSED", "connect ECONNREFUSED 127.0.0.1:5432", "unavailable"],
    ["ECONNRESET", "read ECONNRESET", "unavailable"],
    ["EPIPE", "write EPIPE", "unavailable"],
    ["57P01", "terminating connection due to administrator command", "unavailable"],
    ["57P03", "the database system is starting up", "unavailable"],
    ["08006", "connection failure", "unavailable"],
    ["53300", "sorry, too many clients already", "unavailable"],
    [undefined, "Connection terminated unexpectedly", "unavailable"],
    [undefined, "timeout exceeded when trying to connect", "unavailable"],
    [undefined, "Client has encountered a connection error and is not queryable", "unavailable"],
    ["55P03", "canceling statement due to lock timeout", "busy"],
    ["23505", "duplicate key value violates unique constraint", "unchanged"],
    ["42P01", 'relation "nowhere" does not exist', "unchanged"],
    [undefined, "something else", "unchanged"],
  ])("%s %s → %s", (code, message, want) => {
    const e = err(code, message);
    const m = mapPgError(e);
    if (want === "unchanged") expect(m).toBe(e);
    else {
      expect(m).toBeInstanceOf(StoreError);
      expect((m as StoreError).code).toBe(want);
      expect((m as StoreError).cause).toBe(e);
    }
  });
  it("keeps a StoreError as it is", () => {
    const e = new StoreError("open_failed", "closed");
    expect(mapPgError(e)).toBe(e);
  });
});
