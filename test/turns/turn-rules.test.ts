// The rules of turns on their own: pure functions over a thread's plain state value. A state is
// never mutated (adapters may share it), survives JSON (what PostgreSQL stores), and a stored
// value is read back strictly.
import { describe, expect, it } from "vitest";
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
  threadTurnsSchema,
} from "../../src/turns/turn-rules.js";

const L = { ...DEFAULT_TURN_LIMITS, maxOpenPerThread: 2, maxParticipantsPerThread: 3, maxTurnMs: 1_000 };
const turn = (userId: string, at: number, explicit = false) => ({ id: newTurnId(), userId, at, explicit });

/** Freezes a state and everything in it, so any mutation by a rule throws. */
function deepFreeze<T>(v: T): T {
  if (v && typeof v === "object") {
    for (const x of Object.values(v)) deepFreeze(x);
    Object.freeze(v);
  }
  return v;
}

describe("turn rules", () => {
  it("never mutate the state they are given, and report every id they stop holding", () => {
    let s: ThreadTurns = EMPTY_THREAD;
    const ids: string[] = [];
    for (const [u, at, ex] of [
      ["UA", 1, true],
      ["UB", 2, true],
      ["UC", 3, false],
      ["UD", 4, true],
    ] as const) {
      const t = turn(u, at, ex);
      ids.push(t.id);
      const before = JSON.stringify(deepFreeze(s));
      const c = beginTurn(s, t, at * 1000, L);
      expect(JSON.stringify(s)).toBe(before);
      s = c.state;
      if (u === "UD") expect(c.dropped).toEqual([ids[2], ids[0]]); // Carol's implicit turn superseded, Alice's explicit one over the cap
    }
    expect(s.open.map((t) => t.userId)).toEqual(["UB", "UD"]);
    expect(s.participants).toEqual(["UB", "UC", "UD"]);
    deepFreeze(s);
    expect(endTurn(s, ids[1]!, 5, L)?.dropped).toEqual([ids[1]]);
    expect(expireTurns(s, 1_002, L).dropped).toEqual([ids[1]]);
    expect(slackTurn(s, { id: newTurnId(), userId: "UE", at: 5 }, "0.000003", L)).toBeUndefined();
  });

  it("a state survives JSON and the strict schema unchanged, with the same answers", () => {
    let s: ThreadTurns = EMPTY_THREAD;
    s = beginTurn(s, turn("UA", 10, true), 10_000, L).state;
    s = slackTurn(s, { id: newTurnId(), userId: "UB", at: 11 }, "1700000000.000100", L)!.state;
    const back = threadTurnsSchema.parse(JSON.parse(JSON.stringify(s)));
    expect(back).toEqual(s);
    expect(resolveTurn(back, undefined, 12, L)).toEqual(resolveTurn(s, undefined, 12, L));
    expect(resolveTurn(back, undefined, 12, L)).toEqual({ kind: "turn_ambiguous", users: ["UA", "UB"] });
  });

  it("the schema refuses a stored value with unknown keys, a malformed turn id or a wrong type", () => {
    const ok = beginTurn(EMPTY_THREAD, turn("UA", 1), 1000, L).state;
    expect(threadTurnsSchema.safeParse(ok).success).toBe(true);
    expect(threadTurnsSchema.safeParse({ ...ok, admin: true }).success).toBe(false);
    expect(threadTurnsSchema.safeParse({ ...ok, current: { ...ok.current, id: "turn_guessable" } }).success).toBe(
      false,
    );
    expect(threadTurnsSchema.safeParse({ ...ok, participants: "UA" }).success).toBe(false);
  });

  it("a state over a lowered cap is trimmed on its next turn, the input untouched", () => {
    const wide = deepFreeze({ ...EMPTY_THREAD, open: [turn("UA", 1, true), turn("UB", 2, true), turn("UC", 3, true)] });
    const c = beginTurn(wide, turn("UD", 4), 4000, L);
    expect(c.state.open.map((t) => t.userId)).toEqual(["UB", "UC"]);
    expect(c.dropped).toEqual([wide.open[0]!.id]);
    expect(wide.open).toHaveLength(3);
  });
});
