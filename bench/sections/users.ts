// Bench users, each with a thread of their own.
import type { ThreadRef } from "../../src/domain/thread.js";

/** `n` users, each with a thread of their own in `channel`. */
export function usersWithThreads(
  team: string,
  channel: string,
  prefix: string,
  n: number,
  tsBase: number,
): { user: string; thread: ThreadRef }[] {
  return Array.from({ length: n }, (_, i) => ({
    user: `${prefix}${String(i).padStart(3, "0")}`,
    thread: { teamId: team, channelId: channel, threadTs: `${tsBase}.${String(i).padStart(6, "0")}` },
  }));
}
