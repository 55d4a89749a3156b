import type { AuditEvent } from "../../audit/event.js";
import type { Stmt } from "./dialect.js";

// A store operation written once for both adapters: a generator that yields the steps it needs
// (read rows, change rows, write audit rows, take a lock) and receives their answers. SQLite's
// adapter runs it synchronously inside its write transaction (better-sqlite3), PostgreSQL's
// awaits each step on the transaction's client (pg). The rule is one text; only the driving differs.

/** One step of a program. */
export type Step =
  /** Rows of a SELECT, or of a write's RETURNING. */
  | { readonly kind: "rows"; readonly stmt: Stmt }
  /** How many rows a write changed. */
  | { readonly kind: "changes"; readonly stmt: Stmt }
  /** Audit rows written in the same transaction as the change they describe. */
  | { readonly kind: "audit"; readonly events: readonly AuditEvent[] }
  /** A transaction-scoped lock on a name, for writers that could otherwise race (a no-op with one writer). */
  | { readonly kind: "lock"; readonly name: string };

/** A store operation returning `T`; it yields steps and is resumed with their answers. */
export type Program<T> = Generator<Step, T, unknown>;

/** Reads rows (typed by the caller, as every row read is: the schema is ours). */
export function* rows<R>(stmt: Stmt): Program<R[]> {
  return (yield { kind: "rows", stmt }) as R[];
}

/** Runs a write; its answer is the number of rows changed. */
export function* changes(stmt: Stmt): Program<number> {
  return (yield { kind: "changes", stmt }) as number;
}

/** Writes audit rows in the current transaction. */
export function* audit(events: readonly AuditEvent[]): Program<void> {
  if (events.length > 0) yield { kind: "audit", events };
}

/** Takes a transaction-scoped lock on `name`. */
export function* lock(name: string): Program<void> {
  yield { kind: "lock", name };
}

/** Runs `p` with a synchronous executor (SQLite). */
export function runSync<T>(p: Program<T>, exec: (s: Step) => unknown): T {
  for (let next = p.next(); ; ) {
    if (next.done) return next.value;
    next = p.next(exec(next.value));
  }
}

/** Runs `p` with an asynchronous executor (PostgreSQL). */
export async function runAsync<T>(p: Program<T>, exec: (s: Step) => Promise<unknown>): Promise<T> {
  for (let next = p.next(); ; ) {
    if (next.done) return next.value;
    next = p.next(await exec(next.value));
  }
}
