// The two store adapters behind one interface, so every contract test runs against both: SQLite in a
// temp file, PostgreSQL in a real cluster started once per test file (one database, a fresh schema per test).
import path from "node:path";
import { afterAll, afterEach, beforeAll } from "vitest";
import { ManualClock } from "../../../src/clock/clock.js";
import type { ServiceRegistry } from "../../../src/config/registry.js";
import { ConnectionLifecycle } from "../../../src/connections/lifecycle.js";
import { memoryLogger } from "../../../src/log/logger.js";
import { openPostgresStore, type PostgresStore } from "../../../src/store/postgres/pg-store.js";
import { openSqliteStore, type SqliteStore } from "../../../src/store/sqlite/sqlite-store.js";
import type { Store } from "../../../src/store/store.js";
import { KeyRing } from "../../../src/vault/keyring.js";
import { Vault } from "../../../src/vault/vault.js";
import { newKeyB64, TempDirs, testRegistry } from "../../support/foundation.js";
import { type PgCluster, startPostgres } from "../../support/postgres.js";

/** Everything a contract test needs, over either adapter. */
export interface StoreHarness {
  readonly clock: ManualClock;
  readonly store: Store;
  readonly vault: Vault;
  readonly registry: ServiceRegistry;
  readonly lifecycle: ConnectionLifecycle;
  /** Runs raw SQL (`?` placeholders) on the same database, bypassing the repositories. */
  exec(sql: string, ...params: unknown[]): Promise<void>;
  /** Reads rows with raw SQL (`?` placeholders). */
  rows<T = Record<string, unknown>>(sql: string, ...params: unknown[]): Promise<T[]>;
  /** Opens a second store on the same database (what another process or replica sees). */
  reopen(): Promise<Store>;
}

/** How each adapter words the constraint failures the contract relies on. */
export interface ErrorWords {
  readonly unique: RegExp;
  readonly foreignKey: RegExp;
  readonly check: RegExp;
  readonly notNull: RegExp;
  readonly closed: RegExp;
  readonly appendOnly: RegExp;
}

/** One adapter under test. */
export interface Backend {
  readonly name: "sqlite" | "postgres";
  /** A fresh, migrated, empty store with a ManualClock; closed after the test. */
  harness(): Promise<StoreHarness>;
  /** A binary literal in this dialect (for raw INSERTs). */
  blob(hex: string): string;
  readonly errors: ErrorWords;
}

function build(store: Store, clock: ManualClock, parts: Pick<StoreHarness, "exec" | "rows" | "reopen">): StoreHarness {
  const vault = new Vault(KeyRing.fromBase64(newKeyB64()));
  const registry = testRegistry();
  const lifecycle = new ConnectionLifecycle({ store, vault, registry, clock, log: memoryLogger() });
  return { clock, store, vault, registry, lifecycle, ...parts };
}

/** `?` placeholders to PostgreSQL's `$n`. */
function dollars(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}

/**
 * Registers the per-file hooks and returns both backends. Call once at the top of a contract test
 * file, then `describe.each(backends())`.
 */
export function backends(): Backend[] {
  const tmp = new TempDirs();
  const open: Store[] = [];
  let cluster: PgCluster | undefined;
  let databaseUrl = "";
  beforeAll(async () => {
    cluster = await startPostgres();
    databaseUrl = await cluster.createDatabase();
  });
  afterEach(async () => {
    for (const s of open.splice(0)) await s.close();
    tmp.cleanup();
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  const sqlite: Backend = {
    name: "sqlite",
    async harness() {
      const clock = new ManualClock();
      const file = path.join(tmp.make(), "slaude.db");
      const { store } = openSqliteStore(file, () => clock.now());
      open.push(store);
      const db = (store as SqliteStore).db;
      return build(store, clock, {
        exec: async (sql, ...params) => void db.prepare(sql).run(...params),
        rows: async <T>(sql: string, ...params: unknown[]) => db.prepare(sql).all(...params) as T[],
        reopen: async () => {
          const s = openSqliteStore(file, () => clock.now()).store;
          open.push(s);
          return s;
        },
      });
    },
    blob: (hex) => `x'${hex}'`,
    errors: {
      unique: /UNIQUE constraint failed/,
      foreignKey: /FOREIGN KEY/,
      check: /CHECK/,
      notNull: /NOT NULL/,
      closed: /not open/,
      appendOnly: /append-only/,
    },
  };

  const postgres: Backend = {
    name: "postgres",
    async harness() {
      if (!cluster) throw new Error("the test PostgreSQL did not start");
      const clock = new ManualClock();
      // A schema per test (a database per test costs a second each): the same role owns both.
      const url = await cluster.createSchema(databaseUrl);
      const { store } = await openPostgresStore({ url }, () => clock.now());
      open.push(store);
      const db = (store as PostgresStore).db;
      return build(store, clock, {
        exec: async (sql, ...params) => void (await db.query(dollars(sql), params)),
        rows: async <T>(sql: string, ...params: unknown[]) => (await db.query(dollars(sql), params)).rows as T[],
        reopen: async () => {
          const s = (await openPostgresStore({ url }, () => clock.now())).store;
          open.push(s);
          return s;
        },
      });
    },
    blob: (hex) => `'\\x${hex}'::bytea`,
    errors: {
      unique: /duplicate key value violates unique constraint/,
      foreignKey: /violates foreign key constraint/,
      check: /violates check constraint/,
      notNull: /violates not-null constraint/,
      closed: /not open/,
      appendOnly: /append-only/,
    },
  };
  return [sqlite, postgres];
}
