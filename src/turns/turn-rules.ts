import { randomBytes } from "node:crypto";
import { z } from "zod";
import type { ThreadRef } from "../domain/thread.js";

// The rules of turns, pure: a thread's turns are one plain, serialisable value (ThreadTurns), and
// every change and every answer is a function of that value, the limits and `now`. The memory
// adapter (turn-state.ts) keeps the values in an LRU; the PostgreSQL adapter keeps one JSONB row per
// thread and applies these same functions under a row lock. One home for the rules, both adapters.

/** Who a tool call runs for, as the live turns of its thread decide it. */
export type TurnResolution =
  | { readonly kind: "caller"; readonly userId: string }
  | { readonly kind: "no_turn" }
  /** Turns of two or more users are live and the request named none of them. */
  | { readonly kind: "turn_ambiguous"; readonly users: readonly string[] }
  /** The request named a turn that is not live in its thread (forged, of another thread, ended or superseded). */
  | { readonly kind: "turn_unknown" };

/** A Slack message ts ("1700000000.000100") as microseconds since the epoch, or undefined if malformed. */
export function slackTsMicros(ts: string): number | undefined {
  const m = /^(\d{1,12})\.(\d{1,8})$/.exec(ts);
  if (!m) return undefined;
  // Slack's ts has six fraction digits; pad or cut so "…​.1" and "…​.100000" order alike.
  return Number(m[1]) * 1_000_000 + Number(m[2]!.padEnd(6, "0").slice(0, 6));
}

/** Whether an event ordered at `o` is strictly newer than the watermark `w`. */
export function newerOrder(o: number, w: number): boolean {
  return o > w;
}

/** The shape of a turn id the broker issues (`turn_` + 18 random bytes, base64url). */
export const TURN_ID_PATTERN = /^turn_[A-Za-z0-9_-]{24}$/;

/** A fresh, unguessable turn id (the only impure helper here: ids are an input of the rules). */
export function newTurnId(): string {
  return `turn_${randomBytes(18).toString("base64url")}`;
}

/** The key of a thread in maps and in the turn_threads table. */
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
export const DEFAULT_TURN_LIMITS: TurnLimits = {
  maxThreads: 10_000,
  maxOpenPerThread: 16,
  maxParticipantsPerThread: 256,
  maxTurnMs: 3_600_000,
};

/** One turn inside a thread's state (the thread is the state's key). */
export interface TurnRecord {
  readonly id: string;
  readonly userId: string;
  readonly at: number;
  /** Reported with `explicit_end`: live until ended (or it outlives `maxTurnMs`). */
  readonly explicit: boolean;
}

/** A thread's turns as one plain value: what the memory LRU holds and what a PostgreSQL row stores as JSONB. */
export interface ThreadTurns {
  /** The newest turn; an implicit one is live only while it is the newest. */
  readonly current: TurnRecord | null;
  /** Explicit turns not ended yet, oldest first. */
  readonly open: readonly TurnRecord[];
  /** Ordering watermark (µs): a Slack message not newer than this does not set the turn. */
  readonly watermark: number;
  /** Users who had a turn here, least recent first (for borrowing user-scoped connections). */
  readonly participants: readonly string[];
}

/** The state of a thread that is served but has had no turn yet. */
export const EMPTY_THREAD: ThreadTurns = Object.freeze({ current: null, open: [], watermark: 0, participants: [] });

const turnRecordSchema = z
  .object({
    id: z.string().regex(TURN_ID_PATTERN),
    userId: z.string().min(1).max(64),
    at: z.number().int().nonnegative(),
    explicit: z.boolean(),
  })
  .strict();

/** Strict schema of a stored {@link ThreadTurns} (JSON read back from the database is validated like any edge). */
export const threadTurnsSchema = z
  .object({
    current: turnRecordSchema.nullable(),
    open: z.array(turnRecordSchema).max(1_000),
    watermark: z.number().int().nonnegative(),
    participants: z.array(z.string().min(1).max(64)).max(10_000),
  })
  .strict();

/** A change of a thread's state: the new value, and the turn ids it no longer holds (to unindex). */
export interface TurnChange {
  readonly state: ThreadTurns;
  readonly dropped: readonly string[];
}

/** Whether explicit turn `t` has outlived `maxTurnMs` at `now` (it then counts as ended). */
function expired(t: TurnRecord, now: number, limits: TurnLimits): boolean {
  return now - t.at >= limits.maxTurnMs;
}

/**
 * `turn` begins (a host report ordered at `at`×1000 µs, or a Slack message at its ts): it becomes the
 * newest, a previous implicit turn ends, an explicit one joins the open turns (oldest ended beyond
 * the cap), and its user becomes the most recent participant (oldest forgotten beyond the cap).
 */
export function beginTurn(s: ThreadTurns, turn: TurnRecord, order: number, limits: TurnLimits): TurnChange {
  const dropped: string[] = [];
  if (s.current && !s.current.explicit) dropped.push(s.current.id);
  // States are never mutated: an unchanged list is shared, a changed one is a new array.
  const opened = turn.explicit ? [...s.open, turn] : s.open;
  const over = opened.length - limits.maxOpenPerThread;
  for (const t of opened.slice(0, Math.max(0, over))) dropped.push(t.id);
  const participants = [...s.participants.filter((u) => u !== turn.userId), turn.userId];
  const extra = participants.length - limits.maxParticipantsPerThread;
  return {
    state: {
      current: turn,
      open: over > 0 ? opened.slice(over) : opened,
      watermark: Math.max(s.watermark, order),
      participants: extra > 0 ? participants.slice(extra) : participants,
    },
    dropped,
  };
}

/**
 * A Slack message by `userId` with timestamp `ts`: a turn only when newer than the thread's
 * watermark, so a retried or replayed older event never moves the turn back; undefined otherwise.
 */
export function slackTurn(
  s: ThreadTurns,
  turn: Omit<TurnRecord, "explicit">,
  ts: string,
  limits: TurnLimits,
): TurnChange | undefined {
  const o = slackTsMicros(ts);
  if (o === undefined || !newerOrder(o, s.watermark)) return undefined;
  return beginTurn(s, { ...turn, explicit: false }, o, limits);
}

/** Ends the explicit turns that outlived `maxTurnMs` (and the newest, if it was one of them). */
export function expireTurns(s: ThreadTurns, now: number, limits: TurnLimits): TurnChange {
  const gone = s.open.filter((t) => expired(t, now, limits)).map((t) => t.id);
  if (!gone.length) return { state: s, dropped: [] };
  const current = s.current && gone.includes(s.current.id) ? null : s.current;
  return { state: { ...s, current, open: s.open.filter((t) => !gone.includes(t.id)) }, dropped: gone };
}

/** The turns live at `now`: open explicit ones not expired, and the newest if implicit. */
export function liveTurns(s: ThreadTurns, now: number, limits: TurnLimits): TurnRecord[] {
  return [...s.open.filter((t) => !expired(t, now, limits)), ...(s.current && !s.current.explicit ? [s.current] : [])];
}

/** Ends turn `id` when it is live at `now`; undefined when it is unknown, ended, superseded or expired. */
export function endTurn(s: ThreadTurns, id: string, now: number, limits: TurnLimits): TurnChange | undefined {
  if (!liveTurns(s, now, limits).some((t) => t.id === id)) return undefined;
  return {
    state: { ...s, open: s.open.filter((t) => t.id !== id), current: s.current?.id === id ? null : s.current },
    dropped: [id],
  };
}

/**
 * Whose call this is: the named turn when `turnId` is given (it must be live in this thread),
 * otherwise the one user all live turns agree on; two users live at once is ambiguous.
 */
export function resolveTurn(
  s: ThreadTurns | undefined,
  turnId: string | undefined,
  now: number,
  limits: TurnLimits,
): TurnResolution {
  const live = s ? liveTurns(s, now, limits) : [];
  if (turnId !== undefined) {
    const t = live.find((x) => x.id === turnId);
    return t ? { kind: "caller", userId: t.userId } : { kind: "turn_unknown" };
  }
  const users = [...new Set(live.map((t) => t.userId))];
  if (users.length === 0) return { kind: "no_turn" };
  if (users.length > 1) return { kind: "turn_ambiguous", users };
  return { kind: "caller", userId: users[0]! };
}
