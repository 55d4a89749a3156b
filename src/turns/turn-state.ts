import type { ThreadRef } from "../store/records.js";

/** Whose message the agent is answering now in one thread. */
export interface Turn {
  readonly thread: ThreadRef;
  readonly userId: string;
  readonly at: number;
}

/** The key of a thread in maps. */
export function threadKey(t: ThreadRef): string {
  return `${t.teamId}/${t.channelId}/${t.threadTs}`;
}

/**
 * The live turn of every thread, fed by the host's POST /v1/turns and by Slack message events.
 * Read on every tool call: never snapshotted into a session.
 */
export class TurnState {
  private readonly turns = new Map<string, Turn>();
  private readonly participants = new Map<string, Set<string>>();

  /** Records that `userId` now has the turn in `thread`. */
  set(thread: ThreadRef, userId: string, at: number): void {
    const key = threadKey(thread);
    this.turns.set(key, { thread, userId, at });
    let p = this.participants.get(key);
    if (!p) this.participants.set(key, (p = new Set()));
    p.add(userId);
  }

  private readonly served = new Set<string>();

  /** Marks a thread as one the agent serves (a session is bound to it), so Slack messages there count as turns. */
  markServed(thread: ThreadRef): void {
    this.served.add(threadKey(thread));
  }

  /** Whether the agent serves `thread` (a session was bound to it or the host reported a turn there). */
  isServed(thread: ThreadRef): boolean {
    const key = threadKey(thread);
    return this.served.has(key) || this.turns.has(key);
  }

  /** The user whose turn it is in `thread`, or undefined when no turn is known. */
  current(thread: ThreadRef): string | undefined {
    return this.turns.get(threadKey(thread))?.userId;
  }

  /** Users who have had a turn in `thread` (for user-scoped connections borrowable there). */
  participantsOf(thread: ThreadRef): ReadonlySet<string> {
    return this.participants.get(threadKey(thread)) ?? new Set();
  }
}
