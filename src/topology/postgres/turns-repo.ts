import type { RowProof } from "../../domain/row-proof.js";
import type { ThreadRef } from "../../domain/thread.js";
import { StoreError } from "../../store/errors.js";
import type { PgDb, Sql } from "../../store/postgres/pg-db.js";
import { versionSql } from "../../store/postgres/row-proof.js";
import {
  beginTurn,
  DEFAULT_TURN_LIMITS,
  EMPTY_THREAD,
  endTurn,
  expireTurns,
  newTurnId,
  resolveTurn,
  slackTurn,
  type ThreadTurns,
  type TurnChange,
  type TurnLimits,
  type TurnRecord,
  type TurnResolution,
  threadKey,
  threadTurnsSchema,
} from "../../turns/turn-rules.js";
import type { Turn, TurnStore } from "../../turns/turn-store.js";

// The turns of every thread in PostgreSQL, so a turn reported to any replica is in force at the
// next call on every replica. One row per thread (turn_threads) holds its ThreadTurns value; every
// change locks that row (SELECT ... FOR UPDATE), applies the pure rules of turn-rules.ts and writes
// the value back with the turn-id index (turn_ids) in the same transaction. A call's read is one
// primary-key lookup.

/** Reads a stored state strictly: a row that does not parse fails the call, it is never guessed at. */
function parseState(raw: unknown, key: string): ThreadTurns {
  const p = threadTurnsSchema.safeParse(raw);
  if (!p.success)
    throw new StoreError(
      "open_failed",
      `turn state of thread ${key} is not valid: ${p.error.issues[0]?.message ?? "unreadable"}`,
    );
  return p.data;
}

/** A change computed by the rules inside the row lock: the new state and the turn id it adds, if any. */
type Mutation = { readonly change: TurnChange; readonly added?: TurnRecord } | undefined;

/** The PostgreSQL adapter of the turn port (see {@link TurnStore}); `withLimits` gives the configured one. */
export class PgTurnStore implements TurnStore {
  constructor(
    private readonly db: PgDb,
    private readonly limits: TurnLimits = DEFAULT_TURN_LIMITS,
  ) {}

  /** The same store with the deployment's limits (SLAUDE_TURNS_MAX_THREADS, SLAUDE_TURN_MAX_SECONDS). */
  withLimits(limits: Partial<TurnLimits>): PgTurnStore {
    return new PgTurnStore(this.db, { ...DEFAULT_TURN_LIMITS, ...limits });
  }

  /**
   * Locks the row of `key` (created empty first when `create`), prunes expired turns, applies `fn`,
   * and writes state, seen time and id index in one statement; undefined when there is no row.
   */
  private async mutate<T>(
    key: string,
    now: number,
    create: boolean,
    fn: (s: ThreadTurns) => { m: Mutation; out: T },
  ): Promise<T | undefined> {
    return this.db.tx(async (q) => {
      if (create)
        await q.query(
          "INSERT INTO turn_threads (thread_key, state, seen_at) VALUES ($1, $2, $3) ON CONFLICT (thread_key) DO NOTHING",
          [key, EMPTY_THREAD, now],
        );
      const row = (
        await q.query<{ state: unknown }>("SELECT state FROM turn_threads WHERE thread_key = $1 FOR UPDATE", [key])
      ).rows[0];
      if (!row) return undefined;
      const pruned = expireTurns(parseState(row.state, key), now, this.limits);
      const { m, out } = fn(pruned.state);
      const state = m?.change.state ?? pruned.state;
      const dropped = [...pruned.dropped, ...(m?.change.dropped ?? [])];
      await write(q, key, state, now, dropped, m?.added?.id);
      return out;
    });
  }

  async set(thread: ThreadRef, userId: string, at: number, opts: { readonly explicit?: boolean } = {}): Promise<Turn> {
    const turn: TurnRecord = { id: newTurnId(), userId, at, explicit: opts.explicit === true };
    await this.mutate(threadKey(thread), at, true, (s) => ({
      m: { change: beginTurn(s, turn, at * 1000, this.limits), added: turn },
      out: true,
    }));
    return { ...turn, thread };
  }

  async fromSlack(thread: ThreadRef, userId: string, ts: string, at: number): Promise<Turn | undefined> {
    const turn: TurnRecord = { id: newTurnId(), userId, at, explicit: false };
    const done = await this.mutate(threadKey(thread), at, false, (s) => {
      const change = slackTurn(s, turn, ts, this.limits);
      return { m: change ? { change, added: turn } : undefined, out: change !== undefined };
    });
    return done ? { ...turn, thread } : undefined;
  }

  async end(id: string, now: number): Promise<boolean> {
    const key = (
      await this.db.query<{ thread_key: string }>("SELECT thread_key FROM turn_ids WHERE turn_id = $1", [id])
    ).rows[0]?.thread_key;
    if (key === undefined) return false;
    const done = await this.mutate(key, now, false, (s) => {
      const change = endTurn(s, id, now, this.limits);
      return { m: change ? { change } : undefined, out: change !== undefined };
    });
    return done === true;
  }

  async threadOf(id: string): Promise<ThreadRef | undefined> {
    const key = (
      await this.db.query<{ thread_key: string }>("SELECT thread_key FROM turn_ids WHERE turn_id = $1", [id])
    ).rows[0]?.thread_key;
    // The key is threadKey(): team/channel/ts, none of which holds a '/'.
    const [teamId, channelId, threadTs, ...rest] = key?.split("/") ?? [];
    return teamId && channelId && threadTs && rest.length === 0 ? { teamId, channelId, threadTs } : undefined;
  }

  async resolve(thread: ThreadRef, turnId: string | undefined, now: number): Promise<TurnResolution> {
    const key = threadKey(thread);
    const row = (
      await this.db.query<{ state: unknown; seen_at: number }>(
        "SELECT state, seen_at FROM turn_threads WHERE thread_key = $1",
        [key],
      )
    ).rows[0];
    // A call keeps its thread served: the seen time is refreshed (rarely: a quarter of the max age)
    // so the reaper never forgets a thread a session is still calling in.
    if (!row || now - row.seen_at > Math.floor(this.limits.maxTurnMs / 4)) await this.markServed(thread, now);
    return resolveTurn(row ? parseState(row.state, key) : undefined, turnId, now, this.limits);
  }

  /**
   * `resolve`, with what a later call needs to resolve it again from memory: the thread's state as
   * read, its seen time, and its version from the same read (row-proof.ts; null: no row).
   */
  async resolveProved(
    thread: ThreadRef,
    turnId: string | undefined,
    now: number,
  ): Promise<{
    resolution: TurnResolution;
    state: ThreadTurns | undefined;
    seenAt: number | undefined;
    proof: RowProof;
    later: (turnId: string | undefined, now: number) => TurnResolution | undefined;
  }> {
    const key = threadKey(thread);
    const v = versionSql({ kind: "turn", threadKey: key, version: null }, 2);
    const row = (
      await this.db.query<{ state: unknown; seen_at: number | null; proof_version: string | null }>(
        `SELECT t.state, t.seen_at, proof.v AS proof_version FROM (SELECT ${v.sql} AS v) proof
         LEFT JOIN turn_threads t ON t.thread_key = $1`,
        [key, ...v.params],
      )
    ).rows[0];
    const there = row !== undefined && row.seen_at !== null;
    if (!there || now - row.seen_at! > Math.floor(this.limits.maxTurnMs / 4)) await this.markServed(thread, now);
    const state = there ? parseState(row.state, key) : undefined;
    const seenAt = there ? row.seen_at! : undefined;
    const refreshAfter = Math.floor(this.limits.maxTurnMs / 4);
    return {
      resolution: resolveTurn(state, turnId, now, this.limits),
      state,
      seenAt,
      later: (id, at) =>
        state !== undefined && seenAt !== undefined && at - seenAt <= refreshAfter
          ? resolveTurn(state, id, at, this.limits)
          : undefined,
      // Marking it served wrote the row: its version as read is no longer its version (a later proof fails, as it should).
      proof: { kind: "turn", threadKey: key, version: row?.proof_version ?? null },
    };
  }

  /** Creates the thread's row, or refreshes its seen time when that is over a quarter of the max age old (no new row version otherwise). */
  async markServed(thread: ThreadRef, now: number): Promise<void> {
    await this.db.query(
      `INSERT INTO turn_threads (thread_key, state, seen_at) VALUES ($1, $2, $3)
       ON CONFLICT (thread_key) DO UPDATE SET seen_at = EXCLUDED.seen_at WHERE turn_threads.seen_at < EXCLUDED.seen_at - $4`,
      [threadKey(thread), EMPTY_THREAD, now, Math.floor(this.limits.maxTurnMs / 4)],
    );
  }

  async isServed(thread: ThreadRef): Promise<boolean> {
    return (
      (await this.db.query("SELECT 1 FROM turn_threads WHERE thread_key = $1", [threadKey(thread)])).rows.length > 0
    );
  }

  private async read(thread: ThreadRef): Promise<ThreadTurns | undefined> {
    const key = threadKey(thread);
    const row = (await this.db.query<{ state: unknown }>("SELECT state FROM turn_threads WHERE thread_key = $1", [key]))
      .rows[0];
    return row ? parseState(row.state, key) : undefined;
  }

  async current(thread: ThreadRef): Promise<string | undefined> {
    return (await this.read(thread))?.current?.userId;
  }

  async participantsOf(thread: ThreadRef): Promise<ReadonlySet<string>> {
    return new Set((await this.read(thread))?.participants);
  }

  /** Deletes threads not seen for the turn max age, then the least recently seen beyond `maxThreads` (their ids cascade). */
  async reap(now: number): Promise<number> {
    const idle =
      (await this.db.query("DELETE FROM turn_threads WHERE seen_at < $1", [now - this.limits.maxTurnMs])).rowCount ?? 0;
    const over = await this.db.query(
      "DELETE FROM turn_threads WHERE thread_key IN (SELECT thread_key FROM turn_threads ORDER BY seen_at DESC, thread_key OFFSET $1)",
      [this.limits.maxThreads],
    );
    return idle + (over.rowCount ?? 0);
  }

  /** Threads stored now (for tests and the bench). */
  async size(): Promise<number> {
    return (await this.db.query<{ n: number }>("SELECT count(*)::bigint AS n FROM turn_threads")).rows[0]!.n;
  }
}

/** Writes a thread's new state and its id index in one statement (data-modifying CTEs run together). */
async function write(
  q: Sql,
  key: string,
  state: ThreadTurns,
  now: number,
  dropped: readonly string[],
  added: string | undefined,
): Promise<void> {
  await q.query(
    `WITH u AS (UPDATE turn_threads SET state = $2, seen_at = GREATEST(seen_at, $3) WHERE thread_key = $1),
          d AS (DELETE FROM turn_ids WHERE turn_id = ANY($4::text[]))
     INSERT INTO turn_ids (turn_id, thread_key) SELECT id, $1 FROM unnest($5::text[]) AS id`,
    [key, state, now, dropped, added === undefined ? [] : [added]],
  );
}
