import type { ThreadRef } from "../domain/thread.js";
import type { StoredResultMeta } from "../store/result-repo.js";

// Who may read a stored result: a pure function of the row and the reader, on one screen. Every
// refusal is the same "not found" to the reader (no oracle); the reason goes to the audit only.

/** Why a read was refused (audit only; never shown to the reader). */
export type ReadRefusal =
  | "malformed"
  | "unknown"
  | "no_turn"
  | "other_team"
  | "other_thread"
  | "other_user"
  | "not_member"
  | "expired";

/** The verdict on one read. */
export type ReadVerdict = { readonly kind: "serve" } | { readonly kind: "not_found"; readonly reason: ReadRefusal };

/** The reader: the thread its MCP session is bound to, the user whose turn it is now, and whether they are still a member. */
export interface ReaderFacts {
  readonly thread: ThreadRef;
  readonly userId: string | undefined;
  readonly member: boolean;
}

/** Serve only the owner, in the owner's thread of the owner's team, while a member, before expiry. */
export function readVerdict(row: StoredResultMeta | undefined, reader: ReaderFacts, now: number): ReadVerdict {
  const no = (reason: ReadRefusal): ReadVerdict => ({ kind: "not_found", reason });
  if (!row) return no("unknown");
  if (!reader.userId) return no("no_turn");
  if (row.teamId !== reader.thread.teamId) return no("other_team");
  if (row.channelId !== reader.thread.channelId || row.threadTs !== reader.thread.threadTs) return no("other_thread");
  if (row.ownerUserId !== reader.userId) return no("other_user");
  if (!reader.member) return no("not_member");
  if (row.expiresAt <= now) return no("expired");
  return { kind: "serve" };
}
