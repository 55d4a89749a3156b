import type { RowProof } from "../domain/row-proof.js";
import type { ThreadRef } from "../domain/thread.js";
import type { ThreadTurns, TurnLimits, TurnResolution } from "./turn-rules.js";
import { type Turn, TurnState } from "./turn-state.js";

export type { Turn } from "./turn-state.js";

/**
 * The port every turn reader and writer uses: host reports (POST /v1/turns, /v1/turns/end, the
 * embedded host), Slack messages, and the caller resolution of each tool call. Adapters: memory
 * (one process; SQLite deployments) and PostgreSQL (src/topology/postgres/turns-repo.ts: every replica
 * sees a turn reported to any of them at its very next call). Both apply the rules of turn-rules.ts.
 */
export interface TurnStore {
  /** `userId` now has the turn in `thread` (always applies; ordered at `at`); an explicit turn stays live until ended. */
  set(thread: ThreadRef, userId: string, at: number, opts?: { readonly explicit?: boolean }): Promise<Turn>;
  /** A Slack message in a served thread: a turn only when newer than the thread's watermark; undefined otherwise. */
  fromSlack(thread: ThreadRef, userId: string, ts: string, at: number): Promise<Turn | undefined>;
  /** Ends turn `id`; false when it is unknown, ended, superseded or expired at `now`. */
  end(id: string, now: number): Promise<boolean>;
  /** The thread turn `id` was reported in, while it is indexed (live or not yet pruned); undefined when unknown. */
  threadOf(id: string): Promise<ThreadRef | undefined>;
  /** Whose call this is in `thread` at `now` (the named turn, or the one user all live turns agree on). */
  resolve(thread: ThreadRef, turnId: string | undefined, now: number): Promise<TurnResolution>;
  /**
   * `resolve`, with the thread's state and seen time as read and their proof (shared turns,
   * row-proof.ts): enough to resolve a later call in memory and prove the row unchanged at its commit.
   */
  resolveProved?(
    thread: ThreadRef,
    turnId: string | undefined,
    now: number,
  ): Promise<{
    readonly resolution: TurnResolution;
    readonly state: ThreadTurns | undefined;
    readonly seenAt: number | undefined;
    readonly proof: RowProof;
    /**
     * The same state resolved again for a later call (its turn id, its time), while the row as read
     * still serves it: undefined once its seen time is due to be refreshed (a write), or for no row.
     */
    readonly later: (turnId: string | undefined, now: number) => TurnResolution | undefined;
  }>;
  /** Marks `thread` served (a session is bound to it), so Slack messages there count as turns. */
  markServed(thread: ThreadRef, now: number): Promise<void>;
  /** Whether the agent serves `thread` (a session was bound to it or a turn was reported there). */
  isServed(thread: ThreadRef): Promise<boolean>;
  /** The user of the newest turn in `thread`, or undefined when none is known (or it was ended). */
  current(thread: ThreadRef): Promise<string | undefined>;
  /** Users who have had a turn in `thread` (for user-scoped connections borrowable there). */
  participantsOf(thread: ThreadRef): Promise<ReadonlySet<string>>;
  /** Forgets threads idle past the turn max age (and beyond the thread cap); returns how many. A periodic job calls it. */
  reap(now: number): Promise<number>;
}

/** What a proved turn read gives (TurnStore.resolveProved). */
export type ProvedTurn = Awaited<ReturnType<NonNullable<TurnStore["resolveProved"]>>>;

/**
 * The single-process adapter: today's {@link TurnState} behind the async port. Its LRU bounds it,
 * so {@link reap} has nothing to do. Each method runs synchronously before its promise is returned:
 * a thread marked served is served for the very next Slack event.
 */
export class MemoryTurnStore implements TurnStore {
  readonly state: TurnState;

  constructor(limits: Partial<TurnLimits> = {}) {
    this.state = new TurnState(limits);
  }

  async set(thread: ThreadRef, userId: string, at: number, opts: { readonly explicit?: boolean } = {}): Promise<Turn> {
    return this.state.set(thread, userId, at, opts);
  }

  async fromSlack(thread: ThreadRef, userId: string, ts: string, at: number): Promise<Turn | undefined> {
    return this.state.fromSlack(thread, userId, ts, at);
  }

  async end(id: string, now: number): Promise<boolean> {
    return this.state.end(id, now);
  }

  async threadOf(id: string): Promise<ThreadRef | undefined> {
    return this.state.threadOf(id);
  }

  async resolve(thread: ThreadRef, turnId: string | undefined, now: number): Promise<TurnResolution> {
    return this.state.resolve(thread, turnId, now);
  }

  async markServed(thread: ThreadRef): Promise<void> {
    this.state.markServed(thread);
  }

  async isServed(thread: ThreadRef): Promise<boolean> {
    return this.state.isServed(thread);
  }

  async current(thread: ThreadRef): Promise<string | undefined> {
    return this.state.current(thread);
  }

  async participantsOf(thread: ThreadRef): Promise<ReadonlySet<string>> {
    return this.state.participantsOf(thread);
  }

  async reap(): Promise<number> {
    return 0;
  }
}
