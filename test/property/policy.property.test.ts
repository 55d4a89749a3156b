import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ToolClass } from "../../src/config/registry.js";
import {
  type BorrowCandidate,
  type CallDecision,
  type CallFacts,
  type CandidateConnection,
  resolveCall,
} from "../../src/policy/resolve.js";

// Properties of the pure policy (brief §3, §11 "identity confusion"): for arbitrary facts the
// decision never runs anywhere but on the caller's own connection, a granted member's connection
// for a borrowable read tool, or the shared identity for a non-personal tool. The exhaustive
// table test (test/policy/resolve.test.ts) pins exact answers; these pin what must never happen.

const RUNS = 4_000;
const USERS = ["UALICE01", "UBOB0002", "UCAROL03", "UDAVE004", "UMALLORY"] as const;

const user = fc.constantFrom(...USERS);
const toolClass: fc.Arbitrary<ToolClass> = fc.record({
  access: fc.constantFrom("personal", "borrowable", "own_or_shared"),
  write: fc.boolean(),
});

/** Facts as the orchestrator hands them over: own owned by the caller, others by anyone but the caller, ids unique. */
const facts: fc.Arbitrary<CallFacts> = fc
  .record({
    caller: fc.option(user, { nil: undefined, freq: 6 }),
    // Mostly the caller, so that the later steps of the policy are reached often.
    onBehalfOf: fc.oneof(
      { weight: 3, arbitrary: fc.constant("__caller__") },
      { weight: 1, arbitrary: user },
      { weight: 1, arbitrary: fc.string({ maxLength: 12 }) },
    ),
    serviceKnown: fc.boolean(),
    callerIsMember: fc.oneof({ weight: 4, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
    toolClass,
    own: fc.option(fc.nat({ max: 10_000 }), { nil: undefined }),
    others: fc.array(
      fc.record({ owner: user, createdAt: fc.nat({ max: 10_000 }), ownerIsMember: fc.boolean(), grant: fc.boolean() }),
      { maxLength: 5 },
    ),
    shared: fc.option(fc.nat({ max: 10_000 }), { nil: undefined }),
  })
  .map((r): CallFacts => {
    const caller = r.caller;
    const own: CandidateConnection | undefined =
      r.own !== undefined && caller !== undefined
        ? { id: "conn_own", ownerUserId: caller, createdAt: r.own }
        : undefined;
    const others: BorrowCandidate[] = r.others
      .filter((o) => o.owner !== caller)
      .map((o, i) => ({
        id: `conn_o${i}`,
        ownerUserId: o.owner,
        createdAt: o.createdAt,
        ownerIsMember: o.ownerIsMember,
        grant: o.grant,
      }));
    return {
      caller,
      onBehalfOf: r.onBehalfOf === "__caller__" ? (caller ?? "UNOBODY0") : r.onBehalfOf,
      serviceKnown: r.serviceKnown,
      callerIsMember: r.callerIsMember,
      toolClass: r.toolClass,
      pin: { kind: "run", planned: "pinned" },
      own,
      others,
      shared: r.shared !== undefined ? { id: "conn_shared", ownerUserId: null, createdAt: r.shared } : undefined,
    };
  });

/** Facts that pass the identity checks, so the decision is about whose connection to use. */
const validFacts = facts.filter(
  (f) => f.caller !== undefined && f.onBehalfOf === f.caller && f.serviceKnown && f.callerIsMember,
);

function connectionOf(
  f: CallFacts,
  id: string,
):
  | { kind: "own"; c: CandidateConnection }
  | { kind: "other"; c: BorrowCandidate }
  | { kind: "shared"; c: CandidateConnection }
  | undefined {
  if (f.own?.id === id) return { kind: "own", c: f.own };
  if (f.shared?.id === id) return { kind: "shared", c: f.shared };
  const o = f.others.find((x) => x.id === id);
  return o ? { kind: "other", c: o } : undefined;
}

function check<T extends [unknown]>(property: fc.IProperty<T>): void {
  fc.assert(property, { numRuns: RUNS });
}

describe("resolveCall properties", () => {
  it("a run is on the caller's own connection, a granted member's connection for a borrowable read tool, or the shared one for a non-personal tool", () => {
    check(
      fc.property(facts, (f) => {
        const d = resolveCall(f);
        if (d.kind !== "run") return;
        const target = connectionOf(f, d.connectionId);
        expect(target, "the decision names a connection from the facts").toBeDefined();
        switch (d.via) {
          case "own":
            expect(target?.kind).toBe("own");
            expect(target?.c.ownerUserId).toBe(f.caller);
            break;
          case "grant": {
            expect(target?.kind).toBe("other");
            const o = target?.c as BorrowCandidate;
            expect(o.grant).toBe(true);
            expect(o.ownerIsMember).toBe(true);
            expect(f.toolClass).toEqual({ access: "borrowable", write: false });
            // Borrowing only happens when the caller has nothing of their own.
            expect(f.own).toBeUndefined();
            break;
          }
          case "shared":
            expect(target?.kind).toBe("shared");
            expect(target?.c.ownerUserId).toBeNull();
            expect(f.toolClass.access).not.toBe("personal");
            expect(f.own).toBeUndefined();
            break;
        }
        // Whatever runs, it runs for a known, member caller who is the one on_behalf_of names.
        expect(f.caller).toBeDefined();
        expect(f.onBehalfOf).toBe(f.caller);
        expect(f.serviceKnown && f.callerIsMember).toBe(true);
      }),
    );
  });

  it("a personal tool never runs, nor is asked for, on any connection but the caller's own", () => {
    check(
      fc.property(
        facts.map((f) => ({ ...f, toolClass: { access: "personal" as const, write: f.toolClass.write } })),
        (f) => {
          const d = resolveCall(f);
          expect(d.kind).not.toBe("ask_owner");
          if (d.kind === "run") {
            expect(d.via).toBe("own");
            expect(d.connectionId).toBe(f.own?.id);
          }
        },
      ),
    );
  });

  it("a write tool never runs on another member's connection: it asks the owner for this call", () => {
    check(
      fc.property(
        facts.map((f) => ({ ...f, toolClass: { access: f.toolClass.access, write: true } })),
        (f) => {
          const d = resolveCall(f);
          if (d.kind === "run") {
            expect(["own", "shared"]).toContain(d.via);
            expect(connectionOf(f, d.connectionId)?.kind).not.toBe("other");
          }
          // Even a standing grant does not let a write through silently.
          if (d.kind === "ask_owner" && d.grant) expect(d.reason).toBe("write_under_grant");
        },
      ),
    );
  });

  it("asking is only ever addressed to a member owner of a borrowable candidate, and only when the caller has nothing of their own", () => {
    check(
      fc.property(facts, (f) => {
        const d = resolveCall(f);
        if (d.kind !== "ask_owner") return;
        const target = connectionOf(f, d.connectionId);
        expect(target?.kind).toBe("other");
        const o = target?.c as BorrowCandidate;
        expect(o.ownerUserId).toBe(d.ownerUserId);
        expect(o.ownerUserId).not.toBe(f.caller);
        expect(o.ownerIsMember).toBe(true);
        expect(f.toolClass.access).toBe("borrowable");
        expect(f.own).toBeUndefined();
        expect(d.grant).toBe(o.grant);
        expect(d.reason).toBe(o.grant ? "write_under_grant" : "no_grant");
        if (o.grant) expect(f.toolClass.write).toBe(true);
      }),
    );
  });

  it("an unknown caller, an on_behalf_of mismatch, an unknown service or a non-member caller is always refused, in that order", () => {
    check(
      fc.property(facts, (f) => {
        const d = resolveCall(f);
        if (f.caller === undefined) expect(d).toEqual({ kind: "refuse", code: "no_turn" });
        else if (f.onBehalfOf !== f.caller)
          expect(d).toEqual({ kind: "refuse", code: "on_behalf_of_mismatch", turnUser: f.caller });
        else if (!f.serviceKnown) expect(d).toEqual({ kind: "refuse", code: "unknown_service" });
        else if (!f.callerIsMember) expect(d).toEqual({ kind: "refuse", code: "not_member" });
        else
          expect(["no_turn", "on_behalf_of_mismatch", "unknown_service", "not_member"]).not.toContain(
            d.kind === "refuse" ? d.code : "",
          );
      }),
    );
  });

  it("a departed owner's connection is invisible: removing non-member candidates changes nothing", () => {
    check(
      fc.property(facts, (f) => {
        const d = resolveCall(f);
        const without = resolveCall({ ...f, others: f.others.filter((o) => o.ownerIsMember) });
        expect(without).toEqual(d);
        if ((d.kind === "run" || d.kind === "ask_owner") && connectionOf(f, d.connectionId)?.kind === "other") {
          expect((connectionOf(f, d.connectionId)!.c as BorrowCandidate).ownerIsMember).toBe(true);
        }
      }),
    );
  });

  it("the decision does not depend on the order the candidates were found in", () => {
    check(
      fc.property(
        facts.chain((f) =>
          fc.tuple(
            fc.constant(f),
            fc.shuffledSubarray([...f.others], { minLength: f.others.length, maxLength: f.others.length }),
          ),
        ),
        ([f, shuffled]) => {
          expect(resolveCall({ ...f, others: shuffled })).toEqual(resolveCall(f));
        },
      ),
    );
  });

  it("liveness: the caller's own connection always runs; with nothing usable the caller is sent to connect", () => {
    check(
      fc.property(validFacts, (f) => {
        const d: CallDecision = resolveCall(f);
        if (f.own) expect(d).toEqual({ kind: "run", connectionId: f.own.id, via: "own" });
        const members = f.others.filter((o) => o.ownerIsMember);
        if (!f.own && members.length === 0 && (!f.shared || f.toolClass.access === "personal"))
          expect(d).toEqual({ kind: "needs_connect" });
        // owner_only only when a member could have lent it and the tool is not borrowable.
        if (d.kind === "refuse" && d.code === "owner_only") {
          expect(members.length).toBeGreaterThan(0);
          expect(f.toolClass.access).not.toBe("borrowable");
          expect(members.map((o) => o.ownerUserId)).toContain(d.ownerUserId);
        }
      }),
    );
  });
});
