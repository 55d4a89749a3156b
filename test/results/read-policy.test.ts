// The read policy as a table: every combination of row and reader, against an independent oracle
// written as the rule reads in the brief (owner, same thread, same team, member, unexpired).
import { describe, expect, it } from "vitest";
import { type ReaderFacts, readVerdict } from "../../src/results/read-policy.js";
import type { StoredResultMeta } from "../../src/store/result-repo.js";

const NOW = 1_000_000;
const ROW: StoredResultMeta = {
  id: "res_x",
  teamId: "T1",
  channelId: "C1",
  threadTs: "1.1",
  ownerUserId: "UA",
  callId: "call_x",
  service: "s",
  tool: "t",
  sizeBytes: 10,
  createdAt: NOW - 10,
  expiresAt: NOW + 10,
};

describe("readVerdict", () => {
  it("serves exactly the owner, in the row's thread and team, while a member, before expiry", () => {
    let served = 0;
    let cases = 0;
    for (const exists of [true, false])
      for (const team of ["T1", "T2"])
        for (const channel of ["C1", "C2"])
          for (const ts of ["1.1", "1.2"])
            for (const user of ["UA", "UB", undefined])
              for (const member of [true, false])
                for (const expiresAt of [NOW - 1, NOW, NOW + 1]) {
                  cases++;
                  const row = exists ? { ...ROW, expiresAt } : undefined;
                  const reader: ReaderFacts = {
                    thread: { teamId: team, channelId: channel, threadTs: ts },
                    userId: user,
                    member,
                  };
                  const oracle =
                    exists &&
                    team === "T1" &&
                    channel === "C1" &&
                    ts === "1.1" &&
                    user === "UA" &&
                    member &&
                    expiresAt > NOW;
                  const v = readVerdict(row, reader, NOW);
                  expect(
                    v.kind === "serve",
                    JSON.stringify({ exists, team, channel, ts, user, member, expiresAt }),
                  ).toBe(oracle);
                  if (oracle) served++;
                }
    expect(cases).toBe(2 * 2 * 2 * 2 * 3 * 2 * 3);
    expect(served).toBe(1);
  });

  it("names the reason for the audit: another team before another thread before another user", () => {
    const at = (thread: Partial<ReaderFacts["thread"]>, userId: string | null = "UA", member = true): ReaderFacts => ({
      thread: { teamId: "T1", channelId: "C1", threadTs: "1.1", ...thread },
      userId: userId ?? undefined,
      member,
    });
    expect(readVerdict(undefined, at({}), NOW)).toEqual({ kind: "not_found", reason: "unknown" });
    expect(readVerdict(ROW, at({}, null), NOW)).toEqual({ kind: "not_found", reason: "no_turn" });
    expect(readVerdict(ROW, at({ teamId: "T2", threadTs: "9.9" }, "UB"), NOW)).toEqual({
      kind: "not_found",
      reason: "other_team",
    });
    expect(readVerdict(ROW, at({ threadTs: "9.9" }, "UB"), NOW)).toEqual({ kind: "not_found", reason: "other_thread" });
    expect(readVerdict(ROW, at({}, "UB"), NOW)).toEqual({ kind: "not_found", reason: "other_user" });
    expect(readVerdict(ROW, at({}, "UA", false), NOW)).toEqual({ kind: "not_found", reason: "not_member" });
    expect(readVerdict({ ...ROW, expiresAt: NOW }, at({}), NOW)).toEqual({ kind: "not_found", reason: "expired" });
  });
});
