import { StoreError } from "../errors.js";
import { POSTGRES } from "../sql/dialect.js";
import type { SqlDriver } from "../sql/driver.js";
import { type Program, runAsync, type Step } from "../sql/program.js";
import { writeAudit } from "./audit-repo.js";
import { type LockKeys, xactLock } from "./lock-keys.js";
import type { PgDb, Sql } from "./pg-db.js";

/**
 * Runs a shared store program (src/store/sql/program.ts) with `q`: the pool for a read, the client
 * of an open transaction for a write. A lock is a transaction-scoped advisory lock, so writers on
 * other replicas queue behind it; `keys` null runs a program that takes none (and refuses one that does).
 */
export function runPg<T>(q: Sql, keys: LockKeys | null, p: Program<T>): Promise<T> {
  return runAsync(p, (s) => step(q, keys, s));
}

async function step(q: Sql, keys: LockKeys | null, s: Step): Promise<unknown> {
  switch (s.kind) {
    case "rows":
      return (await q.query(POSTGRES.placeholders(s.stmt.text), s.stmt.values)).rows;
    case "changes":
      return (await q.query(POSTGRES.placeholders(s.stmt.text), s.stmt.values)).rowCount ?? 0;
    case "audit":
      return writeAudit(q, s.events);
    case "lock":
      if (!keys)
        throw new StoreError("open_failed", `lock ${JSON.stringify(s.name)} asked for without the store's lock keys`);
      return xactLock(q, keys, s.name);
  }
}

/** The driver of the shared repositories (src/store/sql/driver.ts): a read on the pool, a write in one transaction. */
export function pgDriver(db: PgDb): SqlDriver {
  return {
    dialect: POSTGRES,
    read: (p) => runPg(db, db.lockKeys, p),
    write: (p) => db.tx((q) => runPg(q, db.lockKeys, p)),
  };
}
