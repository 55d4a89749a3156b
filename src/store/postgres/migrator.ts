import { fileURLToPath } from "node:url";
import pg from "pg";
import { StoreError } from "../errors.js";
import { POSTGRES } from "../sql/dialect.js";
import {
  type AppliedMigration,
  INSERT_APPLIED,
  type Migration,
  type MigrationReport,
  migrationFailed,
  migrationReport,
  pendingMigrations,
  readMigrations,
  SELECT_APPLIED,
  schemaMigrationsDdl,
} from "../sql/migrations.js";
import { KEY_PARAM } from "./lock-keys.js";
import type { PgDb, Sql } from "./pg-db.js";

/** The PostgreSQL migrations folder, beside the SQLite ones. */
export const PG_MIGRATIONS_DIR = fileURLToPath(new URL("../../../migrations/postgres/", import.meta.url));

/** The advisory lock every replica takes to migrate: the first one applies, the others wait and find nothing to do. */
export const MIGRATION_LOCK = "slaude-connect:migrations";

/** How long start-up waits for the migrations lock before it fails (another replica's migrations take seconds). */
export const MIGRATION_LOCK_WAIT_MS = 120_000;

/** Reads the PostgreSQL migrations (`NNNN_*.sql`, as for SQLite). */
export function readPgMigrations(dir: string = PG_MIGRATIONS_DIR): Migration[] {
  return readMigrations(dir);
}

/** How this migrator's errors name a file: by its folder under migrations/. */
const FOLDER = "postgres/";

async function applyPending(q: Sql, migrations: readonly Migration[], now: () => number): Promise<MigrationReport> {
  await q.query(schemaMigrationsDdl("BIGINT"));
  const rows = (await q.query<AppliedMigration & Record<string, unknown>>(SELECT_APPLIED)).rows;
  const applied: number[] = [];
  for (const m of pendingMigrations(rows, migrations, FOLDER)) {
    try {
      // PostgreSQL DDL is transactional: a failing migration leaves neither its changes nor its record.
      await q.query("BEGIN");
      await q.query(m.sql);
      await q.query(POSTGRES.placeholders(INSERT_APPLIED), [m.version, m.name, m.checksum, now()]);
      await q.query("COMMIT");
    } catch (cause) {
      await q.query("ROLLBACK").catch(() => {});
      throw migrationFailed(m, cause, FOLDER);
    }
    applied.push(m.version);
  }
  return migrationReport(rows, applied);
}

/**
 * Applies pending migrations under the session advisory lock MIGRATION_LOCK, each in its own
 * transaction with its row in `schema_migrations`; replicas starting together migrate once.
 * Refuses a newer schema or an applied migration whose file has changed, as the SQLite migrator does.
 * Waits at most `lockWaitMs` for the lock, then fails with StoreError `migration_lock_timeout`
 * naming the session that holds it: a start-up never hangs behind a stuck or foreign session.
 */
export async function migratePg(
  db: PgDb,
  migrations: readonly Migration[] = readPgMigrations(),
  now: () => number = Date.now,
  lockWaitMs: number = MIGRATION_LOCK_WAIT_MS,
): Promise<MigrationReport> {
  // Its own session, not a pooled one: the lock is a session lock, and ending the session frees it whatever happened.
  const client = new pg.Client({ ...db.clientConfig(), connectionTimeoutMillis: 10_000 });
  client.on("error", () => {}); // a lost connection fails the pending query, which is what reports it
  try {
    await client.connect();
    await client.query(`SET lock_timeout = ${Math.max(1, Math.floor(lockWaitMs))}`);
    for (const k of db.lockKeys.keys(MIGRATION_LOCK)) {
      try {
        await client.query(`SELECT pg_advisory_lock(${KEY_PARAM})`, [k]);
      } catch (err) {
        if ((err as { code?: unknown }).code !== "55P03") throw err;
        throw new StoreError(
          "migration_lock_timeout",
          `waited ${Math.round(lockWaitMs / 1000)} s for the migrations lock, ${await holderOf(client, k)}; nothing was migrated`,
          { cause: err },
        );
      }
    }
    await client.query("SET lock_timeout = 0"); // migrations may lock busy tables; the wait above was for the advisory lock only
    return await applyPending(client, migrations, now);
  } finally {
    await client.end().catch(() => {});
  }
}

/** Who holds advisory lock `key`, for the error: another replica migrating, or a session of another role. */
async function holderOf(client: pg.Client, key: string): Promise<string> {
  const r = await client
    .query<{ pid: number; role: string | null; app: string | null; mine: boolean }>(
      `SELECT l.pid, a.usename AS role, a.application_name AS app, a.usename = current_user AS mine
         FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND ((l.classid::int8 << 32) | l.objid::int8) = $1::bigint
          AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
        LIMIT 1`,
      [key],
    )
    .catch(() => undefined);
  const h = r?.rows[0];
  if (!h) return "held by a session that could not be identified";
  if (h.mine)
    return `held by session ${h.pid} of this role (application ${JSON.stringify(h.app ?? "")}): a replica still migrating, or stuck`;
  return `held by session ${h.pid} of ANOTHER role ${JSON.stringify(h.role ?? "?")}: revoke CONNECT on this database from PUBLIC and from every role but the broker's (docs/operations.md, PostgreSQL roles)`;
}
