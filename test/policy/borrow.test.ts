import { describe, expect, it } from "vitest";
import { type BorrowRow, borrowable } from "../../src/policy/borrow.js";

// The borrow rule over every combination of the fields it reads, against an oracle written from
// the brief's words: another owner's row, in this team, scoped to this thread, or scoped to its
// owner when the owner took part in the thread. Never the caller's own row, never the shared one.

const THREAD = { teamId: "T1", channelId: "C1", threadTs: "1.1" };
const CALLER = "UALICE";

function expected(r: BorrowRow, participants: ReadonlySet<string>): boolean {
  if (r.scope === "shared" || r.ownerUserId === null) return false;
  if (r.ownerUserId === CALLER) return false;
  if (r.teamId !== THREAD.teamId) return false;
  if (r.scope === "thread") return r.channelId === THREAD.channelId && r.threadTs === THREAD.threadTs;
  return participants.has(r.ownerUserId);
}

describe("borrowable", () => {
  const rows: { name: string; row: BorrowRow; participants: Set<string> }[] = [];
  for (const owner of [null, CALLER, "UBOB"])
    for (const scope of ["thread", "user", "shared"] as const)
      for (const teamId of ["T1", "T2"])
        for (const [channelId, threadTs] of [
          ["C1", "1.1"],
          ["C1", "1.2"],
          ["C2", "1.1"],
          [null, null],
        ] as const)
          for (const participants of [new Set<string>(), new Set(["UBOB"]), new Set([CALLER, "UBOB"])]) {
            const row = { ownerUserId: owner, teamId, scope, channelId, threadTs };
            const name = `${owner ?? "shared"} ${scope} ${teamId} ${channelId}/${threadTs} [${[...participants]}]`;
            rows.push({ name, row, participants });
          }

  it("reaches both answers", () => {
    expect(new Set(rows.map((r) => expected(r.row, r.participants)))).toEqual(new Set([true, false]));
  });

  it.each(rows.map((r) => [r.name, r] as const))("%s", (_name, r) => {
    expect(borrowable(r.row, CALLER, THREAD, r.participants)).toBe(expected(r.row, r.participants));
  });
});
