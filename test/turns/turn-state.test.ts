import { describe, expect, it } from "vitest";
import { TurnState } from "../../src/turns/turn-state.js";

// The turn state on its own: ordering of Slack messages, overlapping explicit turns, expiry of
// never-ended turns, and the bounds of every map it holds.

const T = { teamId: "T1", channelId: "C1", threadTs: "1700000000.000100" };
const OTHER = { ...T, threadTs: "1700000000.000200" };
const A = "UALICE01";
const B = "UBOB0002";

describe("Slack message ordering", () => {
  it("a message not newer than the thread's current turn does not move it back", () => {
    const s = new TurnState();
    s.markServed(T);
    expect(s.fromSlack(T, A, "1700000100.000001", 0)).toBeDefined();
    expect(s.fromSlack(T, B, "1700000200.000001", 0)).toBeDefined();
    // A retry or replay of Alice's earlier message, and one with the very same ts.
    expect(s.fromSlack(T, A, "1700000100.000001", 0)).toBeUndefined();
    expect(s.fromSlack(T, A, "1700000200.000001", 0)).toBeUndefined();
    expect(s.current(T)).toBe(B);
    expect(s.fromSlack(T, A, "1700000200.000002", 0)).toBeDefined();
    expect(s.current(T)).toBe(A);
  });

  it("a host report orders at its time: older messages delivered after it are ignored", () => {
    const s = new TurnState();
    s.set(T, B, 1_700_000_300_000);
    expect(s.fromSlack(T, A, "1700000299.999999", 0)).toBeUndefined();
    expect(s.current(T)).toBe(B);
    expect(s.fromSlack(T, A, "1700000300.000001", 0)).toBeDefined();
    expect(s.current(T)).toBe(A);
  });

  it("messages in a thread nobody serves, or with a malformed ts, set nothing", () => {
    const s = new TurnState();
    expect(s.fromSlack(OTHER, A, "1700000100.000001", 0)).toBeUndefined();
    expect(s.isServed(OTHER)).toBe(false);
    s.markServed(T);
    expect(s.fromSlack(T, A, "yesterday", 0)).toBeUndefined();
    expect(s.current(T)).toBeUndefined();
  });
});

describe("overlapping turns", () => {
  it("without explicit ends, the newest turn wins as before and a superseded id is unknown", () => {
    const s = new TurnState();
    const a = s.set(T, A, 1);
    expect(s.resolve(T, undefined, 2)).toEqual({ kind: "caller", userId: A });
    expect(s.resolve(T, a.id, 2)).toEqual({ kind: "caller", userId: A });
    const b = s.set(T, B, 3);
    expect(s.resolve(T, undefined, 4)).toEqual({ kind: "caller", userId: B });
    expect(s.resolve(T, a.id, 4)).toEqual({ kind: "turn_unknown" });
    expect(s.resolve(T, b.id, 4)).toEqual({ kind: "caller", userId: B });
  });

  it("an explicit turn overlaps later ones: unnamed calls are ambiguous until it ends", () => {
    const s = new TurnState();
    const a = s.set(T, A, 1, { explicit: true });
    const b = s.set(T, B, 2, { explicit: true });
    expect(s.resolve(T, undefined, 3)).toEqual({ kind: "turn_ambiguous", users: [A, B] });
    expect(s.resolve(T, a.id, 3)).toEqual({ kind: "caller", userId: A });
    expect(s.resolve(T, b.id, 3)).toEqual({ kind: "caller", userId: B });
    // A Slack message by Bob (an implicit turn) changes nothing while Alice's turn runs.
    s.markServed(T);
    expect(s.fromSlack(T, B, "1700000000.000300", 4)).toBeDefined();
    expect(s.resolve(T, undefined, 5).kind).toBe("turn_ambiguous");
    expect(s.end(a.id)).toBe(true);
    expect(s.end(a.id)).toBe(false);
    expect(s.resolve(T, a.id, 6)).toEqual({ kind: "turn_unknown" });
    // Only Bob's turns are live: one user, no ambiguity.
    expect(s.resolve(T, undefined, 6)).toEqual({ kind: "caller", userId: B });
    expect(s.end(b.id)).toBe(true);
    // The implicit Slack turn is still the newest.
    expect(s.resolve(T, undefined, 7)).toEqual({ kind: "caller", userId: B });
  });

  it("ending the only turn leaves nobody to act for", () => {
    const s = new TurnState();
    const a = s.set(T, A, 1, { explicit: true });
    expect(s.end(a.id)).toBe(true);
    expect(s.resolve(T, undefined, 2)).toEqual({ kind: "no_turn" });
    expect(s.current(T)).toBeUndefined();
  });

  it("a turn id of another thread, or a made-up one, is unknown", () => {
    const s = new TurnState();
    const a = s.set(T, A, 1, { explicit: true });
    s.set(OTHER, B, 1, { explicit: true });
    expect(s.resolve(OTHER, a.id, 2)).toEqual({ kind: "turn_unknown" });
    expect(s.resolve(T, `turn_${"A".repeat(24)}`, 2)).toEqual({ kind: "turn_unknown" });
    expect(s.end(`turn_${"A".repeat(24)}`)).toBe(false);
  });

  it("an explicit turn never ended counts as ended after maxTurnMs", () => {
    const s = new TurnState({ maxTurnMs: 1_000 });
    const a = s.set(T, A, 0, { explicit: true });
    s.set(T, B, 500, { explicit: true });
    expect(s.resolve(T, undefined, 999).kind).toBe("turn_ambiguous");
    expect(s.resolve(T, undefined, 1_000)).toEqual({ kind: "caller", userId: B });
    expect(s.resolve(T, a.id, 1_000)).toEqual({ kind: "turn_unknown" });
    expect(s.end(a.id)).toBe(false);
  });
});

describe("bounds", () => {
  it("tracks at most maxThreads threads, forgetting the least recently used with their turn ids", () => {
    const s = new TurnState({ maxThreads: 100 });
    const first = s.set({ ...T, threadTs: "1.000000" }, A, 0, { explicit: true });
    for (let i = 0; i < 100_000; i++) s.set({ ...T, threadTs: `${i + 2}.000000` }, i % 2 ? A : B, i);
    expect(s.size).toBe(100);
    expect(s.current({ ...T, threadTs: "1.000000" })).toBeUndefined();
    expect(s.end(first.id)).toBe(false);
    // The newest threads are all there.
    expect(s.current({ ...T, threadTs: "100001.000000" })).toBe(A);
    // The id index shrinks with them: one live turn per remembered thread.
    expect(s.indexedIds).toBe(100);
  });

  it("caps open turns and participants per thread", () => {
    const s = new TurnState({ maxOpenPerThread: 4, maxParticipantsPerThread: 8 });
    const ids = Array.from(
      { length: 6 },
      (_, i) => s.set(T, `U${String(i).padStart(8, "0")}`, i, { explicit: true }).id,
    );
    expect(s.resolve(T, ids[0], 10)).toEqual({ kind: "turn_unknown" });
    expect(s.resolve(T, ids[1], 10)).toEqual({ kind: "turn_unknown" });
    expect(s.resolve(T, ids[5], 10).kind).toBe("caller");
    const r = s.resolve(T, undefined, 10);
    expect(r.kind === "turn_ambiguous" ? r.users : []).toHaveLength(4);
    for (let i = 0; i < 50; i++) s.set(T, `UX${String(i).padStart(6, "0")}`, 20 + i);
    expect(s.participantsOf(T).size).toBe(8);
    expect(s.participantsOf(T).has("UX000049")).toBe(true);
  });
});
