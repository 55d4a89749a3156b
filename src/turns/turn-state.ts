import { LRUCache } from "lru-cache";
import type { ThreadRef } from "../domain/thread.js";
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
} from "./turn-rules.js";

export { DEFAULT_TURN_LIMITS, TURN_ID_PATTERN, type TurnLimits, type TurnResolution, threadKey } from "./turn-rules.js";

/** Whose message the agent is answering in one thread; `explicit` turns stay live until ended. */
export interface Turn extends TurnRecord {
  readonly thread: ThreadRef;
}

/** An LRU entry: the thread and its current state value (replaced, never mutated, by the rules). */
interface Entry {
  readonly thread: ThreadRef;
  state: ThreadTurns;
}

/**
 * The live turns of every thread in this process's memory (the single-process adapter): each
 * thread's state is a plain value changed only by the pure rules of turn-rules.ts. Bounded: an LRU
 * of threads, and per thread capped open turns and participants.
 */
export class TurnState {
  private readonly limits: TurnLimits;
  private readonly threads: LRUCache<string, Entry>;
  /** turn id → thread key, kept in step with `threads` so ids of forgotten threads are unknown. */
  private readonly byId = new Map<string, string>();

  constructor(limits: Partial<TurnLimits> = {}) {
    this.limits = { ...DEFAULT_TURN_LIMITS, ...limits };
    this.threads = new LRUCache<string, Entry>({
      max: this.limits.maxThreads,
      dispose: (e) => {
        if (e.state.current) this.byId.delete(e.state.current.id);
        for (const o of e.state.open) this.byId.delete(o.id);
      },
    });
  }

  /** Threads tracked now (at most `maxThreads`). */
  get size(): number {
    return this.threads.size;
  }

  /** Turn ids indexed now (at most threads × (open turns + 1)). */
  get indexedIds(): number {
    return this.byId.size;
  }

  private entry(thread: ThreadRef): Entry {
    const key = threadKey(thread);
    let e = this.threads.get(key);
    if (!e) {
      e = { thread, state: EMPTY_THREAD };
      this.threads.set(key, e);
    }
    return e;
  }

  private apply(e: Entry, change: TurnChange, added?: TurnRecord): void {
    for (const id of change.dropped) this.byId.delete(id);
    e.state = change.state;
    if (added) this.byId.set(added.id, threadKey(e.thread));
  }

  /**
   * The host reports that `userId` now has the turn in `thread` (always applies); an `explicit`
   * turn stays live until {@link end}. The previous implicit turn of the thread ends here.
   */
  set(thread: ThreadRef, userId: string, at: number, opts: { readonly explicit?: boolean } = {}): Turn {
    const e = this.entry(thread);
    const turn: TurnRecord = { id: newTurnId(), userId, at, explicit: opts.explicit === true };
    this.apply(e, beginTurn(e.state, turn, at * 1000, this.limits), turn);
    return { ...turn, thread: e.thread };
  }

  /**
   * A Slack message by `userId` with timestamp `ts` in a served thread: it sets the turn only when
   * newer than the thread's current turn, so a retried or replayed older event never moves it back.
   */
  fromSlack(thread: ThreadRef, userId: string, ts: string, at: number): Turn | undefined {
    const e = this.threads.get(threadKey(thread));
    if (!e) return undefined;
    const turn: TurnRecord = { id: newTurnId(), userId, at, explicit: false };
    const change = slackTurn(e.state, turn, ts, this.limits);
    if (!change) return undefined;
    this.apply(e, change, turn);
    return { ...turn, thread: e.thread };
  }

  /**
   * Ends the turn `id`; returns false when it is unknown, already ended or superseded, or (given
   * `now`) outlived `maxTurnMs`.
   */
  end(id: string, now?: number): boolean {
    const key = this.byId.get(id);
    const e = key === undefined ? undefined : this.threads.peek(key);
    if (!e) return false;
    if (now !== undefined) this.apply(e, expireTurns(e.state, now, this.limits));
    // Without `now` nothing has expired yet: an indexed id is live.
    const change = endTurn(e.state, id, now ?? Number.NEGATIVE_INFINITY, this.limits);
    if (!change) return false;
    this.apply(e, change);
    return true;
  }

  /** The thread of the indexed turn `id`, or undefined when unknown (or its thread was forgotten). */
  threadOf(id: string): ThreadRef | undefined {
    const key = this.byId.get(id);
    return key === undefined ? undefined : this.threads.peek(key)?.thread;
  }

  /**
   * Whose call this is in `thread`: the named turn when `turnId` is given (it must be live in this
   * thread), otherwise the one user all live turns agree on; two users live at once is ambiguous.
   */
  resolve(thread: ThreadRef, turnId: string | undefined, now: number): TurnResolution {
    const e = this.threads.get(threadKey(thread));
    if (e) this.apply(e, expireTurns(e.state, now, this.limits));
    return resolveTurn(e?.state, turnId, now, this.limits);
  }

  /** Marks a thread as one the agent serves (a session is bound to it), so Slack messages there count as turns. */
  markServed(thread: ThreadRef): void {
    this.entry(thread);
  }

  /** Whether the agent serves `thread` (a session was bound to it or a turn was reported there). */
  isServed(thread: ThreadRef): boolean {
    return this.threads.has(threadKey(thread));
  }

  /** The user of the newest turn in `thread`, or undefined when none is known (or it was ended). */
  current(thread: ThreadRef): string | undefined {
    return this.threads.peek(threadKey(thread))?.state.current?.userId;
  }

  /** Users who have had a turn in `thread` (for user-scoped connections borrowable there). */
  participantsOf(thread: ThreadRef): ReadonlySet<string> {
    return new Set(this.threads.peek(threadKey(thread))?.state.participants);
  }
}
