import { describe, expect, it } from "vitest";
import type { ToolAccess, ToolClass } from "../../src/config/registry.js";
import type { PinGate } from "../../src/pinning/policy.js";
import {
  type BorrowCandidate,
  type CallDecision,
  type CallFacts,
  type CandidateConnection,
  pickCandidate,
  resolveCall,
} from "../../src/policy/resolve.js";

// An exhaustive table test of the pure policy (brief §3). Every combination of the facts is
// generated, and the expected decision comes from an oracle written here from the brief's text,
// step by step, without reusing anything from src/policy. The facts include the tool's pin (the
// override of a quarantined tool and the fail-closed class of a trusted new one, docs/pinning.md).

const ALICE = "UALICE01";
const BOB = "UBOB0002";
const CAROL = "UCAROL03";
const DAVE = "UDAVE004";
const MALLORY = "UMALLORY";

const OWN: CandidateConnection = { id: "conn_own", ownerUserId: ALICE, createdAt: 5_000 };
const SHARED: CandidateConnection = { id: "conn_shared", ownerUserId: null, createdAt: 1 };

function other(
  id: string,
  ownerUserId: string,
  createdAt: number,
  ownerIsMember: boolean,
  grant: boolean,
): BorrowCandidate {
  return { id, ownerUserId, createdAt, ownerIsMember, grant };
}

/** The "other members' connections" situations, each a list the orchestrator could hand the policy. */
const OTHERS: Record<string, readonly BorrowCandidate[]> = {
  none: [],
  owner_not_member: [other("conn_b", BOB, 100, false, false)],
  owner_not_member_with_grant: [other("conn_b", BOB, 100, false, true)],
  without_grant: [other("conn_b", BOB, 100, true, false)],
  with_grant: [other("conn_b", BOB, 100, true, true)],
  // A newer granted connection beats an older ungranted one; a granted but departed owner's never counts.
  several_granted_first: [
    other("conn_b", BOB, 100, true, false),
    other("conn_c", CAROL, 300, true, true),
    other("conn_d", DAVE, 50, false, true),
  ],
  // None granted: the oldest member's connection.
  several_oldest: [
    other("conn_c", CAROL, 300, true, false),
    other("conn_b", BOB, 200, true, false),
    other("conn_d", DAVE, 10, false, false),
  ],
  // Same age: the smallest id.
  several_same_age_by_id: [
    other("conn_z", CAROL, 100, true, true),
    other("conn_a", BOB, 100, true, true),
    other("conn_m", DAVE, 100, true, false),
  ],
  // Every owner left the channel: nobody to borrow from.
  several_none_member: [other("conn_b", BOB, 100, false, true), other("conn_c", CAROL, 50, false, false)],
};

/** Every pin verdict a call can meet (src/pinning/policy.ts `gate`). */
const PINS: Record<string, PinGate> = {
  pinned: { kind: "run", planned: "pinned" },
  unseen: { kind: "run", planned: "unseen" },
  new_trusted: { kind: "run", planned: "new" },
  new_untrusted: { kind: "refuse", status: "new" },
  quarantined: { kind: "refuse", status: "quarantined" },
  rejected: { kind: "refuse", status: "rejected" },
};

/**
 * The oracle's candidate choice, written plainly: only current members count; if any of them
 * granted the caller, only granted ones; then the oldest; then the smallest id.
 */
function expectedPick(others: readonly BorrowCandidate[]): BorrowCandidate | undefined {
  let pool = others.filter((o) => o.ownerIsMember === true);
  if (pool.length === 0) return undefined;
  const granted = pool.filter((o) => o.grant === true);
  if (granted.length > 0) pool = granted;
  let oldest = Infinity;
  for (const o of pool) if (o.createdAt < oldest) oldest = o.createdAt;
  const ids = pool.filter((o) => o.createdAt === oldest).map((o) => o.id);
  ids.sort();
  return pool.find((o) => o.id === ids[0]);
}

/** The oracle: brief §3, in the brief's own order. */
function expectedDecision(f: CallFacts): CallDecision {
  // 1. The principal is the live turn user; on_behalf_of is only a cross-check.
  if (f.caller === undefined) return { kind: "refuse", code: "no_turn" };
  if (f.onBehalfOf !== f.caller) return { kind: "refuse", code: "on_behalf_of_mismatch", turnUser: f.caller };
  // The model may invent a service.
  if (!f.serviceKnown) return { kind: "refuse", code: "unknown_service" };
  // 2. The caller must be a current member of the thread's channel.
  if (!f.callerIsMember) return { kind: "refuse", code: "not_member" };
  // docs/pinning.md: a new tool the service trusts runs as if unclassified: personal, write.
  const toolClass: ToolClass =
    f.pin.kind === "run" && f.pin.planned === "new" ? { access: "personal", write: true } : f.toolClass;
  const onConnection = connectionDecision(f, toolClass);
  // A quarantined, rejected or unreviewed new tool is refused before any connection is used; a
  // refusal that names the owner stands, since the tool could not run there anyway.
  if (f.pin.kind === "refuse" && onConnection.kind !== "refuse") {
    if (f.pin.status === "new") return { kind: "refuse", code: "tool_unreviewed", pin: "new" };
    return { kind: "refuse", code: "tool_quarantined", pin: f.pin.status };
  }
  return onConnection;
}

/** The oracle's step 3: which connection a call of class `toolClass` runs on. */
function connectionDecision(f: CallFacts, toolClass: ToolClass): CallDecision {
  // 3a. The caller's own connection.
  if (f.own !== undefined) return { kind: "run", connectionId: f.own.id, via: "own" };
  // 3b. Another member's connection, only for borrowable tools.
  const lender = expectedPick(f.others);
  const borrowable = toolClass.access === "borrowable";
  if (lender !== undefined && borrowable) {
    if (!lender.grant)
      return {
        kind: "ask_owner",
        connectionId: lender.id,
        ownerUserId: lender.ownerUserId,
        reason: "no_grant",
        grant: false,
      };
    if (toolClass.write)
      return {
        kind: "ask_owner",
        connectionId: lender.id,
        ownerUserId: lender.ownerUserId,
        reason: "write_under_grant",
        grant: true,
      };
    return { kind: "run", connectionId: lender.id, via: "grant" };
  }
  // 3c. The shared identity, never for personal tools.
  const personal = toolClass.access === "personal";
  if (f.shared !== undefined && !personal) return { kind: "run", connectionId: f.shared.id, via: "shared" };
  // A member's connection exists, but this tool may not run on it.
  if (lender !== undefined) return { kind: "refuse", code: "owner_only", ownerUserId: lender.ownerUserId };
  // 3d. Nothing usable.
  return { kind: "needs_connect" };
}

interface Row {
  readonly name: string;
  readonly facts: CallFacts;
  readonly expected: CallDecision;
}

function* combinations(): Generator<Row> {
  const accesses: ToolAccess[] = ["personal", "borrowable", "own_or_shared"];
  for (const callerKnown of [true, false])
    for (const obo of ["match", "mismatch"] as const)
      for (const serviceKnown of [true, false])
        for (const callerIsMember of [true, false])
          for (const access of accesses)
            for (const write of [true, false])
              for (const hasOwn of [true, false])
                for (const [othersName, others] of Object.entries(OTHERS))
                  for (const hasShared of [true, false])
                    for (const [pinName, pin] of Object.entries(PINS)) {
                      const caller = callerKnown ? ALICE : undefined;
                      const toolClass: ToolClass = { access, write };
                      const facts: CallFacts = {
                        caller,
                        onBehalfOf: obo === "match" ? ALICE : MALLORY,
                        serviceKnown,
                        callerIsMember,
                        toolClass,
                        pin,
                        own: hasOwn ? OWN : undefined,
                        others,
                        shared: hasShared ? SHARED : undefined,
                      };
                      const name = [
                        callerKnown ? "caller=known" : "caller=unknown",
                        `obo=${obo}`,
                        serviceKnown ? "service=known" : "service=unknown",
                        callerIsMember ? "member" : "not-member",
                        `${access}/${write ? "write" : "read"}`,
                        hasOwn ? "own" : "no-own",
                        `others=${othersName}`,
                        hasShared ? "shared" : "no-shared",
                        `pin=${pinName}`,
                      ].join(" ");
                      yield { name, facts, expected: expectedDecision(facts) };
                    }
}

const rows = [...combinations()];

describe("resolveCall: every combination of the facts", () => {
  it("covers the whole space", () => {
    expect(rows).toHaveLength(2 * 2 * 2 * 2 * 3 * 2 * 2 * Object.keys(OTHERS).length * 2 * Object.keys(PINS).length);
    // Every kind of decision is reached, so the table cannot pass by only exercising refusals.
    const reached = new Set(
      rows.map((r) =>
        r.expected.kind === "refuse"
          ? `refuse:${r.expected.code}`
          : r.expected.kind === "run"
            ? `run:${r.expected.via}`
            : r.expected.kind === "ask_owner"
              ? `ask:${r.expected.reason}`
              : r.expected.kind,
      ),
    );
    expect([...reached].sort()).toEqual(
      [
        "ask:no_grant",
        "ask:write_under_grant",
        "needs_connect",
        "refuse:no_turn",
        "refuse:not_member",
        "refuse:on_behalf_of_mismatch",
        "refuse:owner_only",
        "refuse:unknown_service",
        "run:grant",
        "run:own",
        "run:shared",
        "refuse:tool_quarantined",
        "refuse:tool_unreviewed",
      ].sort(),
    );
  });

  it.each(rows.map((r) => [r.name, r] as const))("%s", (_name, r) => {
    expect(resolveCall(r.facts)).toEqual(r.expected);
  });
});

describe("resolveCall: the oracle agrees with the brief on named cases", () => {
  const base: CallFacts = {
    caller: BOB,
    onBehalfOf: BOB,
    serviceKnown: true,
    callerIsMember: true,
    toolClass: { access: "borrowable", write: false },
    pin: { kind: "run", planned: "pinned" },
    own: undefined,
    others: [other("conn_a", ALICE, 1, true, false)],
    shared: undefined,
  };
  const cases: [string, Partial<CallFacts>, CallDecision][] = [
    ["no live turn", { caller: undefined }, { kind: "refuse", code: "no_turn" }],
    [
      "a forged on_behalf_of names whose turn it is",
      { onBehalfOf: ALICE },
      { kind: "refuse", code: "on_behalf_of_mismatch", turnUser: BOB },
    ],
    ["an invented service", { serviceKnown: false }, { kind: "refuse", code: "unknown_service" }],
    ["a caller who left the channel", { callerIsMember: false }, { kind: "refuse", code: "not_member" }],
    [
      "own wins over a granted borrow and shared",
      {
        own: { id: "conn_bob", ownerUserId: BOB, createdAt: 9 },
        others: [other("conn_a", ALICE, 1, true, true)],
        shared: SHARED,
      },
      { kind: "run", connectionId: "conn_bob", via: "own" },
    ],
    [
      "a borrowable read without a grant asks the owner",
      {},
      { kind: "ask_owner", connectionId: "conn_a", ownerUserId: ALICE, reason: "no_grant", grant: false },
    ],
    [
      "a borrowable read under a grant runs silently",
      { others: [other("conn_a", ALICE, 1, true, true)] },
      { kind: "run", connectionId: "conn_a", via: "grant" },
    ],
    [
      "a borrowable write under a grant still asks",
      { toolClass: { access: "borrowable", write: true }, others: [other("conn_a", ALICE, 1, true, true)] },
      { kind: "ask_owner", connectionId: "conn_a", ownerUserId: ALICE, reason: "write_under_grant", grant: true },
    ],
    [
      "a borrow beats the shared identity",
      { shared: SHARED },
      { kind: "ask_owner", connectionId: "conn_a", ownerUserId: ALICE, reason: "no_grant", grant: false },
    ],
    [
      "a personal tool under a grant is owner-only",
      { toolClass: { access: "personal", write: false }, others: [other("conn_a", ALICE, 1, true, true)] },
      { kind: "refuse", code: "owner_only", ownerUserId: ALICE },
    ],
    [
      "a personal tool never uses the shared identity",
      { toolClass: { access: "personal", write: false }, others: [], shared: SHARED },
      { kind: "needs_connect" },
    ],
    [
      "an own_or_shared tool uses shared over a member's connection",
      { toolClass: { access: "own_or_shared", write: true }, shared: SHARED },
      { kind: "run", connectionId: "conn_shared", via: "shared" },
    ],
    [
      "an own_or_shared tool with only a member's connection is owner-only",
      { toolClass: { access: "own_or_shared", write: false } },
      { kind: "refuse", code: "owner_only", ownerUserId: ALICE },
    ],
    [
      "an owner who left the channel is not borrowed from",
      { others: [other("conn_a", ALICE, 1, false, true)] },
      { kind: "needs_connect" },
    ],
    [
      "the fail-closed class of an unclassified tool",
      {
        toolClass: { access: "personal", write: true },
        others: [other("conn_a", ALICE, 1, true, true)],
        shared: SHARED,
      },
      { kind: "refuse", code: "owner_only", ownerUserId: ALICE },
    ],
    // The pin facts (docs/pinning.md).
    [
      "a quarantined tool is refused even on the caller's own connection",
      { pin: PINS.quarantined!, own: { id: "conn_bob", ownerUserId: BOB, createdAt: 9 } },
      { kind: "refuse", code: "tool_quarantined", pin: "quarantined" },
    ],
    [
      "a rejected tool is refused before any approval",
      { pin: PINS.rejected! },
      { kind: "refuse", code: "tool_quarantined", pin: "rejected" },
    ],
    [
      "an unreviewed new tool is refused, even under a grant",
      { pin: PINS.new_untrusted!, others: [other("conn_a", ALICE, 1, true, true)] },
      { kind: "refuse", code: "tool_unreviewed", pin: "new" },
    ],
    [
      "a quarantined tool with nothing to run on is refused, not sent to connect",
      { pin: PINS.quarantined!, others: [] },
      { kind: "refuse", code: "tool_quarantined", pin: "quarantined" },
    ],
    [
      "an owner-only refusal stands over the pin's",
      { pin: PINS.quarantined!, toolClass: { access: "personal", write: false } },
      { kind: "refuse", code: "owner_only", ownerUserId: ALICE },
    ],
    [
      "identity refusals come before the pin's",
      { pin: PINS.quarantined!, callerIsMember: false },
      { kind: "refuse", code: "not_member" },
    ],
    [
      "a trusted new tool runs on the caller's own connection",
      { pin: PINS.new_trusted!, own: { id: "conn_bob", ownerUserId: BOB, createdAt: 9 } },
      { kind: "run", connectionId: "conn_bob", via: "own" },
    ],
    [
      "a trusted new borrowable read is never borrowed: it runs as personal",
      { pin: PINS.new_trusted!, others: [other("conn_a", ALICE, 1, true, true)] },
      { kind: "refuse", code: "owner_only", ownerUserId: ALICE },
    ],
    [
      "a trusted new own_or_shared tool never uses the shared identity",
      { pin: PINS.new_trusted!, toolClass: { access: "own_or_shared", write: false }, others: [], shared: SHARED },
      { kind: "needs_connect" },
    ],
    [
      "an unseen tool runs under the registry's class",
      { pin: PINS.unseen!, others: [other("conn_a", ALICE, 1, true, true)] },
      { kind: "run", connectionId: "conn_a", via: "grant" },
    ],
  ];
  it.each(cases)("%s", (_name, patch, decision) => {
    const facts = { ...base, ...patch };
    expect(expectedDecision(facts)).toEqual(decision);
    expect(resolveCall(facts)).toEqual(decision);
  });
});

describe("pickCandidate", () => {
  function permutations<T>(xs: readonly T[]): T[][] {
    if (xs.length <= 1) return [[...xs]];
    return xs.flatMap((x, i) => permutations([...xs.slice(0, i), ...xs.slice(i + 1)]).map((p) => [x, ...p]));
  }

  it.each(Object.entries(OTHERS))("%s: the oracle's choice, whatever the input order", (_name, others) => {
    const want = expectedPick(others);
    for (const p of permutations(others)) expect(pickCandidate(p)?.id).toBe(want?.id);
  });

  it("chooses granted first, then oldest, then by id", () => {
    expect(pickCandidate([])).toBeUndefined();
    expect(pickCandidate(OTHERS.several_granted_first!)?.id).toBe("conn_c");
    expect(pickCandidate(OTHERS.several_oldest!)?.id).toBe("conn_b");
    expect(pickCandidate(OTHERS.several_same_age_by_id!)?.id).toBe("conn_a");
    expect(pickCandidate(OTHERS.several_none_member!)).toBeUndefined();
  });

  it("does not reorder its input", () => {
    const input = [...OTHERS.several_oldest!];
    const before = input.map((o) => o.id);
    pickCandidate(input);
    expect(input.map((o) => o.id)).toEqual(before);
  });
});
