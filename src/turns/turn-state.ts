import { randomBytes } from "node:crypto";
import { LRUCache } from "lru-cache";
import type { ThreadRef } from "../domain/thread.js";
import { newerOrder, slackTsMicros, type TurnResolution } from "./turn-rules.js";

export { TURN_ID_PATTERN, type TurnResolution } from "./turn-rules.js";

/** Whose message the agent is answering in one thread; `explicit` turns stay live until ended. */
export interface Turn {
  readonly id: string;
  readonly thread: ThreadRef;
  readonly userId: string;
  readonly at: number;
  /** Reported with `explicit_end`: live until the host ends it (or it outlives `maxTurnMs`). */
  readonly explicit: boolean;
}

/** The key of a thread in maps. */
export function threadKey(t: ThreadRef): string {
  return `${t.teamId}/${t.channelId}/${t.threadTs}`;
}

/** Bounds of the turn state; every map it holds is capped. */
export interface TurnLimits {
  /** Threads tracked at once; the least recently used thread is forgotten beyond it. */
  readonly maxThreads: number;
  /** Explicit turns live at once in one thread; the oldest is ended beyond it. */
  readonly maxOpenPerThread: number;
  /** Participants remembered per thread (oldest forgotten first). */
  readonly maxParticipantsPerThread: number;
  /** An explicit turn never ended is considered ended this long after it started. */
  readonly maxTurnMs: number;
}

/** Defaults of {@link TurnLimits} (SLAUDE_TURNS_MAX_THREADS, SLAUDE_TURN_MAX_SECONDS). */
export const DEFAULT_TURN_LIMITS: TurnLimits = { maxThreads: 10_000, maxOpenPerThread: 16, maxParticipantsPerThread: 256, maxTurnMs: 3_600_000 };

interface ThreadTurns {
  readonly thread: ThreadRef;
  /** The newest turn; an implicit one is live only while it is the newest. */
  current: Turn | undefined;
  /** Explicit turns not ended yet, oldest first. */
  open: Turn[];
  /** Ordering watermark (µs): a Slack message not newer than this does not set the turn. */
  watermark: number;
  readonly participants: Set<string>;
}

/**
 * The live turns of every thread, fed by the host (POST /v1/turns, /v1/turns/end, the embedded
 * getCaller) and by Slack message events. Read on every tool call: never snapshotted into a session.
 * Bounded: an LRU of threads, and per thread capped open turns and participants.
 */
export class TurnState {
  private readonly limits: TurnLimits;
  private readonly threads: LRUCache<string, ThreadTurns>;
  /** turn id → thread key, kept in step with `threads` so ids of forgotten threads are unknown. */
  private readonly byId = new Map<string, string>();

  constructor(limits: Partial<TurnLimits> = {}) {
    this.limits = { ...DEFAULT_TURN_LIMITS, ...limits };
    this.threads = new LRUCache<string, ThreadTurns>({
      max: this.limits.maxThreads,
      dispose: (t) => {
        if (t.current) this.byId.delete(t.current.id);
        for (const o of t.open) this.byId.delete(o.id);
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

  private entry(thread: ThreadRef): ThreadTurns {
    const key = threadKey(thread);
    let e = this.threads.get(key);
    if (!e) {
      e = { thread, current: undefined, open: [], watermark: 0, participants: new Set() };
      this.threads.set(key, e);
    }
    return e;
  }

  /**
   * The host reports that `userId` now has the turn in `thread` (always applies); an `explicit`
   * turn stays live until {@link end}. The previous implicit turn of the thread ends here.
   */
  set(thread: ThreadRef, userId: string, at: number, opts: { readonly explicit?: boolean } = {}): Turn {
    return this.begin(this.entry(thread), userId, at, opts.explicit === true, at * 1000);
  }

  /**
   * A Slack message by `userId` with timestamp `ts` in a served thread: it sets the turn only when
   * newer than the thread's current turn, so a retried or replayed older event never moves it back.
   */
  fromSlack(thread: ThreadRef, userId: string, ts: string, at: number): Turn | undefined {
    const e = this.threads.get(threadKey(thread));
    const o = slackTsMicros(ts);
    if (!e || o === undefined || !newerOrder(o, e.watermark)) return undefined;
    return this.begin(e, userId, at, false, o);
  }

  private begin(e: ThreadTurns, userId: string, at: number, explicit: boolean, ord: number): Turn {
    const turn: Turn = { id: `turn_${randomBytes(18).toString("base64url")}`, thread: e.thread, userId, at, explicit };
    const key = threadKey(e.thread);
    if (e.current && !e.current.explicit) this.byId.delete(e.current.id);
    e.current = turn;
    e.watermark = Math.max(e.watermark, ord);
    this.byId.set(turn.id, key);
    if (explicit) {
      e.open.push(turn);
      while (e.open.length > this.limits.maxOpenPerThread) this.byId.delete(e.open.shift()!.id);
    }
    e.participants.delete(userId);
    e.participants.add(userId);
    while (e.participants.size > this.limits.maxParticipantsPerThread) e.participants.delete(e.participants.values().next().value!);
    return turn;
  }

  /** Ends the turn `id`; returns false when it is unknown, already ended or superseded. */
  end(id: string): boolean {
    const key = this.byId.get(id);
    const e = key === undefined ? undefined : this.threads.peek(key);
    if (!e) return false;
    this.byId.delete(id);
    e.open = e.open.filter((t) => t.id !== id);
    if (e.current?.id === id) e.current = undefined;
    return true;
  }

  /** The turns of `thread` live at `now`: open explicit ones not expired, and the newest if implicit. */
  private live(e: ThreadTurns, now: number): Turn[] {
    const expired = e.open.filter((t) => now - t.at >= this.limits.maxTurnMs);
    for (const t of expired) this.end(t.id);
    return [...e.open, ...(e.current && !e.current.explicit ? [e.current] : [])];
  }

  /**
   * Whose call this is in `thread`: the named turn when `turnId` is given (it must be live in this
   * thread), otherwise the one user all live turns agree on; two users live at once is ambiguous.
   */
  resolve(thread: ThreadRef, turnId: string | undefined, now: number): TurnResolution {
    const e = this.threads.get(threadKey(thread));
    const live = e ? this.live(e, now) : [];
    if (turnId !== undefined) {
      const t = live.find((x) => x.id === turnId);
      return t ? { kind: "caller", userId: t.userId } : { kind: "turn_unknown" };
    }
    const users = [...new Set(live.map((t) => t.userId))];
    if (users.length === 0) return { kind: "no_turn" };
    if (users.length > 1) return { kind: "turn_ambiguous", users };
    return { kind: "caller", userId: users[0]! };
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
    return this.threads.peek(threadKey(thread))?.current?.userId;
  }

  /** Users who have had a turn in `thread` (for user-scoped connections borrowable there). */
  participantsOf(thread: ThreadRef): ReadonlySet<string> {
    return this.threads.peek(threadKey(thread))?.participants ?? new Set();
  }
}
