import { existsSync } from "node:fs";
import { parseArgs } from "node:util";
import { copySqliteToPostgres } from "../../store/postgres/copy-from-sqlite.js";
import { LockKeys } from "../../store/postgres/lock-keys.js";
import { openPostgresStore } from "../../store/postgres/pg-store.js";
import { openDatabase } from "../../store/sqlite/db.js";
import { type CliContext, UsageError } from "../context.js";
import { formatTable } from "../format.js";

export const MIGRATE_STORE_HELP = `slaude-connect migrate-store [--to postgres://USER:PASSWORD@HOST:PORT/DB?sslmode=…]

  Copies every table of the SQLite file (SLAUDE_DB_PATH) into an empty PostgreSQL database, in one
  transaction, and checks the row count of each table. Credentials stay encrypted under the same
  keys. Without --to, the target is SLAUDE_DATABASE_URL (or SLAUDE_DATABASE_URL_FILE), which keeps
  the password out of the process list. Stop the broker first; the SQLite file is only read.`;

/** `migrate-store`: SQLite file to PostgreSQL, verified by row counts per table. */
export async function migrateStoreCommand(ctx: CliContext, argv: readonly string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: [...argv],
    options: { to: { type: "string" } },
    strict: true,
    allowPositionals: true,
  });
  if (positionals.length)
    throw new UsageError(`migrate-store: unexpected argument "${positionals[0]}"\n\n${MIGRATE_STORE_HELP}`);
  const url = values.to ?? ctx.config.databaseUrl;
  if (!url)
    throw new UsageError(`migrate-store: give --to postgres://… or set SLAUDE_DATABASE_URL\n\n${MIGRATE_STORE_HELP}`);
  if (!/^postgres(ql)?:\/\//.test(url)) throw new UsageError("migrate-store: --to must be a postgres:// URL");
  if (values.to !== undefined && new URL(url).password)
    ctx.err(
      "warning: the password in --to is visible to other users in the process list; prefer SLAUDE_DATABASE_URL_FILE",
    );
  if (!existsSync(ctx.config.dbPath)) {
    ctx.err(`error: no SQLite file at ${ctx.config.dbPath} (SLAUDE_DB_PATH)`);
    return 1;
  }
  const src = openDatabase(ctx.config.dbPath, { readonly: true });
  try {
    const { store } = await openPostgresStore(
      { url, lockWaitMs: ctx.config.dbLockWaitMs, lockKeys: LockKeys.fromRing(ctx.keys.ring) },
      () => ctx.clock.now(),
    );
    try {
      const report = await copySqliteToPostgres(src, store.db);
      ctx.out(
        formatTable(
          ["TABLE", "SQLITE", "POSTGRESQL"],
          report.tables.map((t) => [t.name, String(t.source), String(t.target)]),
        ),
      );
      const off = report.tables.filter((t) => t.source !== t.target);
      if (off.length) {
        ctx.err(
          `error: row counts differ for ${off.map((t) => t.name).join(", ")} (was the broker still writing the SQLite file?)`,
        );
        return 1;
      }
      ctx.out(
        `copied ${report.tables.reduce((n, t) => n + t.target, 0)} rows; every table's count matches. Set SLAUDE_DATABASE_URL on every replica and start them.`,
      );
      return 0;
    } finally {
      await store.close();
    }
  } finally {
    src.close();
  }
}
