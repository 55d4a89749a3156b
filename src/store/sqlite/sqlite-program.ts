import type { Statement } from "better-sqlite3";
import type { AuditEvent } from "../../audit/event.js";
import { SQLITE } from "../sql/dialect.js";
import type { SqlDriver } from "../sql/driver.js";
import { type Program, runSync, type Step } from "../sql/program.js";
import { makeAuditWriter } from "./audit-repo.js";
import { type Db, type LockWait, writeTx } from "./db.js";

/** Most statement texts one runner keeps prepared: the shared statements have a few shapes each. */
const MAX_PREPARED = 256;

/**
 * Runs the shared store programs (src/store/sql/program.ts) on one SQLite handle, synchronously:
 * call it inside a write transaction for a write. Locks are no-ops: SQLite has one writer.
 */
export class SqliteRunner {
  private readonly prepared = new Map<string, Statement<unknown[]>>();
  /** Prepared on the first audit step: a runner that only reads prepares no INSERT. */
  private writeAudit: ((events: readonly AuditEvent[]) => void) | undefined;

  constructor(private readonly db: Db) {}

  /** A prepared statement by SQL text (the candidates query is on every call's hot path). */
  prepare(text: string): Statement<unknown[]> {
    let st = this.prepared.get(text);
    if (!st) {
      if (this.prepared.size >= MAX_PREPARED) this.prepared.clear();
      st = this.db.prepare(SQLITE.placeholders(text));
      this.prepared.set(text, st);
    }
    return st;
  }

  run<T>(p: Program<T>): T {
    return runSync(p, (s) => this.step(s));
  }

  private step(s: Step): unknown {
    switch (s.kind) {
      case "rows":
        return this.prepare(s.stmt.text).all(...s.stmt.values);
      case "changes":
        return this.prepare(s.stmt.text).run(...s.stmt.values).changes;
      case "audit":
        this.writeAudit ??= makeAuditWriter(this.db);
        return this.writeAudit(s.events);
      case "lock":
        return undefined;
    }
  }
}

/** The driver of the repositories written once in src/store/sql/ (driver.ts), on one SQLite handle. */
export function sqliteDriver(db: Db, wait: LockWait): SqlDriver {
  const runner = new SqliteRunner(db);
  return {
    dialect: SQLITE,
    read: async (p) => runner.run(p),
    write: (p) => writeTx(db, () => runner.run(p), wait),
  };
}
