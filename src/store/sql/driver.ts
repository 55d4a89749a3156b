import type { SqlDialect } from "./dialect.js";
import type { Program } from "./program.js";

/**
 * What a repository written once in src/store/sql/ needs of an adapter: its dialect, and a way to
 * run a program as a read and as one write transaction. SQLite's runs it synchronously inside its
 * write transaction, PostgreSQL's awaits each step on the transaction's client.
 */
export interface SqlDriver {
  readonly dialect: SqlDialect;
  read<T>(p: Program<T>): Promise<T>;
  write<T>(p: Program<T>): Promise<T>;
}
