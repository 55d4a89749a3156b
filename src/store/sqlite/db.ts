import { closeSync, existsSync, mkdirSync, openSync } from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { type Clock, sleep, systemClock } from "../../clock/clock.js";
import { errorMessage } from "../../domain/errors.js";
import { StoreError } from "../errors.js";
import type { DbCounts } from "../store.js";

/** A better-sqlite3 handle. */
export type Db = Database.Database;

/**
 * SQLite's own (blocking) busy wait while the store serves: a few milliseconds at most, so another
 * process holding the write lock never freezes the event loop. Longer waits are `writeTx`'s async retries.
 */
export const SERVING_BUSY_TIMEOUT_MS = 5;

/** How long a write waits, asynchronously, for another process's write lock before it fails. */
export interface LockWait {
  /** Total wait before a write fails with StoreError `busy`. */
  readonly maxWaitMs: number;
  /**
   * Times the wait and its pauses; the default is the system clock, since the lock is held by
   * another process in real time. Tests pass a ManualClock to run out the wait without sleeping.
   */
  readonly clock?: Clock;
}

/** The default: as long as the old blocking busy_timeout (5 s), now without blocking. */
export const DEFAULT_LOCK_WAIT: LockWait = { maxWaitMs: 5_000 };

/** Opens (creating if needed) a SQLite file with WAL, foreign keys and a (start-up) busy timeout. */
export function openDatabase(file: string, opts: { readonly?: boolean } = {}): Db {
  try {
    if (!opts.readonly) {
      mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
      // Create the file owner-only before SQLite does: the WAL and SHM files inherit its mode.
      if (!existsSync(file)) closeSync(openSync(file, "a", 0o600));
    }
    const db = new Database(file, { readonly: opts.readonly ?? false, fileMustExist: opts.readonly ?? false });
    // Blocking is fine until the store serves (migrations, CLI reads); openSqliteStore shortens it.
    db.pragma("busy_timeout = 5000");
    if (!opts.readonly) {
      db.pragma("journal_mode = WAL");
      // NORMAL in WAL mode: durable against process crashes (SIGKILL); only power loss can drop the last commits.
      db.pragma("synchronous = NORMAL");
    }
    db.pragma("foreign_keys = ON");
    // Wiped ciphertexts are overwritten on disk, not just unlinked from the b-tree.
    if (!opts.readonly) db.pragma("secure_delete = ON");
    countStatements(db);
    return db;
  } catch (cause) {
    throw new StoreError("open_failed", `cannot open database ${file}: ${errorMessage(cause)}`, { cause });
  }
}

export type { DbCounts };

const counts = new WeakMap<Db, DbCounts>();

/** The counters of `db` (zeros for a handle not opened by openDatabase). */
export function dbCounts(db: Db): Readonly<DbCounts> {
  return counts.get(db) ?? { statements: 0, transactions: 0 };
}

/**
 * Counts every execution of a statement prepared on `db` from now on: one increment per call, so
 * the cost stays a few nanoseconds; this is what shows how many SQLite round trips a warm call makes.
 */
function countStatements(db: Db): void {
  const c: DbCounts = { statements: 0, transactions: 0 };
  counts.set(db, c);
  const prepare = db.prepare.bind(db);
  db.prepare = ((sql: string) => {
    const st = prepare(sql);
    for (const m of ["run", "get", "all", "iterate"] as const) {
      const f = (st[m] as (...a: unknown[]) => unknown).bind(st);
      Object.defineProperty(st, m, {
        value: (...a: unknown[]) => {
          c.statements++;
          return f(...a);
        },
      });
    }
    return st;
  }) as Db["prepare"];
}

function isBusy(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" && code.startsWith("SQLITE_BUSY");
}

/** Runs `fn` with SQLite's busy wait off; synchronous, so nothing else sees the setting. */
function withoutBusyWait<T>(db: Db, fn: () => T): T {
  const previous = db.pragma("busy_timeout", { simple: true }) as number;
  db.pragma("busy_timeout = 0");
  try {
    return fn();
  } finally {
    db.pragma(`busy_timeout = ${previous}`);
  }
}

/**
 * Runs `fn` in one BEGIN IMMEDIATE transaction and returns its value. While another connection
 * holds the write lock, BEGIN fails fast and the attempt is retried after an async pause (the
 * event loop stays free), up to `wait.maxWaitMs`; then StoreError `busy`. `fn` runs only once the
 * lock is held, so it never runs twice for one commit. Other failures (disk full) are thrown as they are.
 */
export function writeTx<T>(db: Db, fn: () => T, wait: LockWait = DEFAULT_LOCK_WAIT): Promise<T> {
  const tx = db.transaction(fn);
  return immediate(db, () => tx.immediate(), wait);
}

/**
 * `writeTx` for a write made again and again (the audit rows of every call): the transaction
 * function is built once, and each run is one synchronous BEGIN IMMEDIATE … COMMIT; only a held
 * lock enters the async retry loop, with the same wait and the same errors as `writeTx`.
 */
export function preparedWriteTx<A, T>(db: Db, fn: (arg: A) => T, wait: LockWait = DEFAULT_LOCK_WAIT) {
  const tx = db.transaction(fn);
  return (arg: A): Promise<T> => immediate(db, () => tx.immediate(arg), wait);
}

/** One attempt at once; the retry loop only when the lock is held (the warm path never enters it). */
function immediate<T>(db: Db, attempt: () => T, wait: LockWait): Promise<T> {
  const clock = wait.clock ?? systemClock;
  const started = clock.now();
  try {
    const out = attempt();
    committed(db);
    return Promise.resolve(out);
  } catch (err) {
    // Anything but a held lock (disk full, I/O, a constraint, an error of `fn`) is not waited out.
    if (!isBusy(err)) return Promise.reject(err);
    return retryWhileBusy(db, attempt, wait, started, err);
  }
}

function committed(db: Db): void {
  const c = counts.get(db);
  if (c) c.transactions++;
}

async function retryWhileBusy<T>(db: Db, attempt: () => T, wait: LockWait, started: number, first: unknown) {
  const clock = wait.clock ?? systemClock;
  let pause = 2;
  let err = first;
  for (;;) {
    const waited = clock.now() - started;
    if (waited >= wait.maxWaitMs) {
      throw new StoreError("busy", `database is locked by another writer (waited ${Math.round(waited)} ms)`, {
        cause: err,
      });
    }
    // Jittered exponential pause, capped, never past the deadline.
    await sleep(clock, Math.min(pause * (0.5 + Math.random()), 50, Math.max(1, wait.maxWaitMs - waited)));
    pause = Math.min(pause * 2, 50);
    try {
      // Retries skip even the short busy wait: with many writers waiting, 5 ms each would add up.
      const out = withoutBusyWait(db, attempt);
      committed(db);
      return out;
    } catch (e) {
      if (!isBusy(e)) throw e;
      err = e;
    }
  }
}
