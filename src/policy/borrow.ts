import type { ThreadRef } from "../domain/thread.js";

// The borrow rule, in one place: which other owners' rows may be offered to a caller in a thread.
// The store's candidates query (src/store/sql/candidates.ts) finds these rows by index; this
// rule is applied again to what it returns, so a query change can never widen who may borrow.

/** The fields of a connection row the borrow rule reads. */
export interface BorrowRow {
  readonly ownerUserId: string | null;
  readonly teamId: string;
  readonly scope: "thread" | "user" | "shared";
  readonly channelId: string | null;
  readonly threadTs: string | null;
}

/**
 * Another owner's connection can be borrowed in `thread` when it is scoped to this thread, or
 * scoped to its owner and the owner took part in the thread (`participants`).
 */
export function borrowable<R extends BorrowRow>(
  c: R,
  caller: string,
  thread: ThreadRef,
  participants: ReadonlySet<string>,
): c is R & { ownerUserId: string } {
  if (c.ownerUserId === null || c.ownerUserId === caller || c.teamId !== thread.teamId) return false;
  const inThread = c.scope === "thread" && c.channelId === thread.channelId && c.threadTs === thread.threadTs;
  return inThread || (c.scope === "user" && participants.has(c.ownerUserId));
}
