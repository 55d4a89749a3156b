import { LockKeys } from "../../store/postgres/lock-keys.js";
import { openPostgresStore } from "../../store/postgres/pg-store.js";
import { openDatabase } from "../../store/sqlite/db.js";
import { migrate } from "../../store/sqlite/migrator.js";
import type { CliContext } from "../context.js";

/** `migrate`: applies pending migrations and reports the schema version. */
export async function migrateCommand(ctx: CliContext): Promise<number> {
  if (ctx.config.databaseUrl) {
    const { store, migrations: r } = await openPostgresStore(
      { url: ctx.config.databaseUrl, lockWaitMs: ctx.config.dbLockWaitMs, lockKeys: LockKeys.fromRing(ctx.keys.ring) },
      () => ctx.clock.now(),
    );
    await store.close();
    ctx.out(
      r.applied.length
        ? `applied postgres ${r.applied.join(", ")}; schema is at ${r.current}`
        : `nothing to do; postgres schema is at ${r.current}`,
    );
    return 0;
  }
  const db = openDatabase(ctx.config.dbPath);
  try {
    const r = migrate(db, undefined, () => ctx.clock.now());
    ctx.out(
      r.applied.length
        ? `applied ${r.applied.join(", ")}; schema is at ${r.current}`
        : `nothing to do; schema is at ${r.current}`,
    );
    return 0;
  } finally {
    db.close();
  }
}
