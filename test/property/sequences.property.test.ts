import { createHash, randomBytes } from "node:crypto";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClickResult } from "../../src/approvals/approval-service.js";
import type { AuditRecord } from "../../src/audit/event.js";
import type { ThreadRef } from "../../src/domain/thread.js";
import { callHash } from "../../src/policy/args-hash.js";
import { ALICE, BOB, CAROL, type Harness, makeHarness, mcpCall, THREAD } from "../integration/broker-harness.js";

// Model-based test of identity and consent through the REAL broker (brief §3, §11): arbitrary
// sequences of turns, connects, grants, revokes and mcp_calls, with the owner answering each
// approval card per a generated script. After every call the invariant is checked against the
// test's own model of who connected and who granted what, the cards it clicked, the audit row,
// and the vendor child's own report of whose credential it ran with.
//
// One harness (one broker, one SQLite file, real vendor children) serves every run; each run gets
// a fresh thread, so connections and grants of earlier runs are out of reach (and revoked at the
// end of each run). Owners are ALICE and BOB (channel members) and CAROL (not a member).

const RUNS = 40;
const MAX_COMMANDS = 12;
const APPROVAL_TIMEOUT_MS = 500;
const MEMBERS = new Set([ALICE, BOB]);
const USERS = [ALICE, BOB, CAROL] as const;
type User = (typeof USERS)[number];
type Tool = "read_item" | "write_item" | "whoami_personal";
type Answer = "allow_thread" | "allow_once" | "deny" | "none" | "wrong_clicker";
const TOOL_CLASS: Record<Tool, { access: "borrowable" | "personal"; write: boolean }> = {
  read_item: { access: "borrowable", write: false },
  write_item: { access: "borrowable", write: true },
  whoami_personal: { access: "personal", write: false },
};

interface MConn {
  readonly id: string;
  readonly owner: string | null;
  readonly token: string;
  readonly createdAt: number;
  active: boolean;
}

/** What the test believes: whose turn it is, the connections of this run's thread, and live grants. */
interface Model {
  turn: User;
  conns: MConn[];
  /** `${connectionId}|${borrower}` of live grants in this run's thread. */
  grants: Set<string>;
  calls: number;
  ran: number;
}

interface Real {
  readonly h: Harness;
  readonly thread: ThreadRef;
  readonly client: Client;
  readonly turn: { user: string };
  /** Highest audit seq already looked at. */
  lastSeq: number;
}

const fingerprint = (token: string) => createHash("sha256").update(token).digest("hex").slice(0, 12);
const activeOf = (m: Readonly<Model>, owner: string | null) => m.conns.find((c) => c.active && c.owner === owner);
const grantKey = (connectionId: string, borrower: string) => `${connectionId}|${borrower}`;

function endConn(m: Model, c: MConn): void {
  c.active = false;
  for (const k of [...m.grants]) if (k.startsWith(`${c.id}|`)) m.grants.delete(k);
}

async function newCallRows(r: Real): Promise<AuditRecord[]> {
  const rows = (await r.h.store.audit.query({ event: "call", take: "latest", limit: 20 })).filter(
    (x) => x.seq > r.lastSeq,
  );
  const all = await r.h.store.audit.query({ take: "latest", limit: 1 });
  r.lastSeq = Math.max(r.lastSeq, ...all.map((x) => x.seq));
  return rows;
}

class SetTurn implements fc.AsyncCommand<Model, Real> {
  constructor(readonly user: User) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    m.turn = this.user;
    r.turn.user = this.user;
  }
  toString = () => `turn(${this.user})`;
}

class Connect implements fc.AsyncCommand<Model, Real> {
  constructor(readonly owner: User | null) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const { connection, token } = await r.h.connect(this.owner, { thread: r.thread });
    // A second connection of the same owner (or a second shared one) replaces the first.
    const old = activeOf(m, this.owner);
    if (old) endConn(m, old);
    m.conns.push({ id: connection.id, owner: this.owner, token, createdAt: connection.createdAt, active: true });
  }
  toString = () => `connect(${this.owner ?? "shared"})`;
}

class Grant implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly owner: User,
    readonly borrower: User,
  ) {}
  check = (m: Readonly<Model>) => activeOf(m, this.owner) !== undefined;
  async run(m: Model, r: Real): Promise<void> {
    const c = activeOf(m, this.owner)!;
    await r.h.store.grants.create(
      {
        id: `grant_${randomBytes(9).toString("base64url")}`,
        connectionId: c.id,
        ...r.thread,
        ownerUserId: this.owner,
        borrowerUserId: this.borrower,
        service: "vendor",
        createdAt: r.h.clock.now(),
      },
      [],
    );
    m.grants.add(grantKey(c.id, this.borrower));
  }
  toString = () => `grant(${this.owner}->${this.borrower})`;
}

class RevokeConnection implements fc.AsyncCommand<Model, Real> {
  constructor(readonly owner: User | null) {}
  check = (m: Readonly<Model>) => activeOf(m, this.owner) !== undefined;
  async run(m: Model, r: Real): Promise<void> {
    const c = activeOf(m, this.owner)!;
    expect(await r.h.lifecycle.revoke(c.id, this.owner ?? "cli:test", "revoked by test")).toBeDefined();
    endConn(m, c);
  }
  toString = () => `revokeConnection(${this.owner ?? "shared"})`;
}

class RevokeGrant implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly owner: User,
    readonly borrower: User,
  ) {}
  check = (m: Readonly<Model>) => {
    const c = activeOf(m, this.owner);
    return c !== undefined && m.grants.has(grantKey(c.id, this.borrower));
  };
  async run(m: Model, r: Real): Promise<void> {
    const c = activeOf(m, this.owner)!;
    const live = await r.h.store.grants.list({ connectionId: c.id, borrowerUserId: this.borrower, liveOnly: true });
    const here = live.filter((g) => g.threadTs === r.thread.threadTs && g.channelId === r.thread.channelId);
    expect(here, "the model's grant exists in the store").toHaveLength(1);
    for (const g of here) expect(await r.h.store.grants.revoke(g.id, this.owner, r.h.clock.now(), [])).toBe(true);
    m.grants.delete(grantKey(c.id, this.borrower));
  }
  toString = () => `revokeGrant(${this.owner}->${this.borrower})`;
}

type Expected =
  | { kind: "refuse"; code: string }
  | { kind: "run"; via: "own" | "grant" | "shared"; conn: MConn }
  | { kind: "ask"; conn: MConn; reason: "no_grant" | "write_under_grant" };

/** What the brief says must happen, from the model alone. */
function expectedOf(m: Readonly<Model>, tool: Tool, onBehalfOf: string): Expected {
  const caller = m.turn;
  if (onBehalfOf !== caller) return { kind: "refuse", code: "on_behalf_of_mismatch" };
  if (!MEMBERS.has(caller)) return { kind: "refuse", code: "not_member" };
  const own = activeOf(m, caller);
  if (own) return { kind: "run", via: "own", conn: own };
  const cls = TOOL_CLASS[tool];
  const candidates = m.conns
    .filter((c) => c.active && c.owner !== null && c.owner !== caller && MEMBERS.has(c.owner))
    .map((c) => ({ c, grant: m.grants.has(grantKey(c.id, caller)) }))
    .sort((a, b) => Number(b.grant) - Number(a.grant) || a.c.createdAt - b.c.createdAt || (a.c.id < b.c.id ? -1 : 1));
  const cand = candidates[0];
  if (cand && cls.access === "borrowable") {
    if (!cand.grant) return { kind: "ask", conn: cand.c, reason: "no_grant" };
    if (cls.write) return { kind: "ask", conn: cand.c, reason: "write_under_grant" };
    return { kind: "run", via: "grant", conn: cand.c };
  }
  const shared = activeOf(m, null);
  if (shared && cls.access !== "personal") return { kind: "run", via: "shared", conn: shared };
  if (cand) return { kind: "refuse", code: "owner_only" };
  return { kind: "refuse", code: "needs_connect" };
}

class McpCall implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly tool: Tool,
    readonly args: Record<string, unknown>,
    readonly onBehalfOf: User | "current",
    readonly answer: Answer,
  ) {}
  check = () => true;

  async run(m: Model, r: Real): Promise<void> {
    const { h } = r;
    const caller = m.turn;
    const obo = this.onBehalfOf === "current" ? caller : this.onBehalfOf;
    const expected = expectedOf(m, this.tool, obo);
    const hash = callHash("vendor", this.tool, this.args);
    const grantsBefore = new Set(m.grants);
    const connsBefore = m.conns.filter((c) => c.active).map((c) => ({ ...c }));
    m.calls++;

    // Run the call; if a card shows up, the owner (or, per script, someone else) answers it.
    const cardsBefore = h.approvals.asked.length;
    const pending = mcpCall(r.client, { tool: this.tool, args: this.args, on_behalf_of: obo });
    const first = await Promise.race([
      pending.then(() => "done" as const),
      h.approvals.nextCard(cardsBefore).then(() => "card" as const),
    ]);
    let click: { by: string; decision: "allowed_thread" | "allowed_once" | "denied"; result: ClickResult } | undefined;
    const card = first === "card" ? h.approvals.asked[cardsBefore] : undefined;
    if (card) {
      const a = card.approval;
      const decide = async (by: string, decision: "allowed_thread" | "allowed_once" | "denied") => ({
        by,
        decision,
        result: await h.approvalService.decide(a.id, a.nonce, by, decision),
      });
      switch (this.answer) {
        case "allow_thread":
          click = await decide(a.ownerUserId, "allowed_thread");
          break;
        case "allow_once":
          click = await decide(a.ownerUserId, "allowed_once");
          break;
        case "deny":
          click = await decide(a.ownerUserId, "denied");
          break;
        case "wrong_clicker":
          // The borrower (anyone but the owner) clicking Allow changes nothing.
          expect((await decide(a.borrowerUserId, "allowed_thread")).result).toBe("not_owner");
          break;
        case "none":
          break;
      }
      // Unanswered (or answered with a click that did not apply), the approval expires when the
      // harness clock passes its timeout: move it there rather than wait in real time.
      if (click?.result !== "applied") await h.clock.advanceAsync(APPROVAL_TIMEOUT_MS);
    }
    const res = await pending;
    expect(h.approvals.asked.length - cardsBefore, "at most one card per call").toBeLessThanOrEqual(1);
    const rows = await newCallRows(r);
    const ranAs = res.structured.ranAs;

    // ---- The invariant: whatever ran, ran on a connection the caller was entitled to use. ----
    if (ranAs !== undefined) {
      m.ran++;
      expect(rows, "exactly one call audit row per run").toHaveLength(1);
      const row = rows[0]!;
      const conn = connsBefore.find((c) => c.id === row.connectionId);
      expect(conn, "ran on a connection that was active in this thread").toBeDefined();
      expect(row.decision).toBe(ranAs);
      expect(row.callerUserId).toBe(caller);
      expect(row.argsHash).toBe(hash);
      expect(row.ownerUserId).toBe(conn!.owner);
      expect(res.structured.connectionOwner).toBe(conn!.owner);
      expect(obo).toBe(caller);
      expect(MEMBERS.has(caller)).toBe(true);
      switch (ranAs) {
        case "own":
          expect(conn!.owner).toBe(caller);
          break;
        case "grant":
          expect(
            grantsBefore.has(grantKey(conn!.id, caller)),
            "a live grant for exactly (connection, caller, thread)",
          ).toBe(true);
          expect(TOOL_CLASS[this.tool]).toEqual({ access: "borrowable", write: false });
          break;
        case "approval_once":
        case "approval_thread":
          expect(card, "a card was shown for this call").toBeDefined();
          expect(card!.approval.connectionId).toBe(conn!.id);
          expect(card!.approval.ownerUserId).toBe(conn!.owner);
          expect(card!.approval.borrowerUserId).toBe(caller);
          expect(card!.approval.argsHash).toBe(hash);
          expect(click).toMatchObject({
            by: conn!.owner,
            decision: ranAs === "approval_once" ? "allowed_once" : "allowed_thread",
            result: "applied",
          });
          expect(TOOL_CLASS[this.tool].access).toBe("borrowable");
          break;
        case "shared":
          expect(conn!.owner).toBeNull();
          expect(TOOL_CLASS[this.tool].access).not.toBe("personal");
          break;
        default:
          throw new Error(`unexpected ranAs ${ranAs}`);
      }
      // The vendor's own word on whose credential it ran with.
      const vendorError = res.structured.vendorIsError === true;
      if (!vendorError && this.tool !== "whoami_personal") {
        const report = JSON.parse(res.text.split("\n")[0]!) as { ranAs: string; tokenFingerprint?: string };
        expect(report.ranAs).toBe(conn!.owner ?? "shared-bot");
        if (this.tool === "read_item") expect(report.tokenFingerprint).toBe(fingerprint(conn!.token));
      }
    } else {
      expect(rows, "nothing ran, so no call audit row").toHaveLength(0);
    }

    // ---- And what should have happened, from the model. ----
    switch (expected.kind) {
      case "refuse":
        expect(card).toBeUndefined();
        expect(res.structured.code).toBe(expected.code);
        break;
      case "run":
        expect(card).toBeUndefined();
        expect(ranAs).toBe(expected.via);
        expect(rows[0]?.connectionId).toBe(expected.conn.id);
        break;
      case "ask": {
        expect(card, `a card to ${expected.conn.owner}`).toBeDefined();
        expect(card!.approval.connectionId).toBe(expected.conn.id);
        expect(card!.card.reason).toBe(expected.reason);
        expect(card!.card.tool).toBe(this.tool);
        // A write's card offers Just once and Deny only: an Allow for thread click on it (which no
        // card shows) is refused, and the call waits until the approval expires.
        const offered = !(this.answer === "allow_thread" && TOOL_CLASS[this.tool].write);
        if (!offered) expect(click?.result).toBe("not_offered");
        const outcome = offered
          ? {
              allow_thread: "approval_thread",
              allow_once: "approval_once",
              deny: "approval_denied",
              none: "approval_expired",
              wrong_clicker: "approval_expired",
            }[this.answer]
          : "approval_expired";
        expect(ranAs ?? res.structured.code).toBe(outcome);
        if (this.answer === "allow_thread" && offered) m.grants.add(grantKey(expected.conn.id, caller));
        // A replayed or late click applies to nothing.
        const a = card!.approval;
        const late = await h.approvalService.decide(a.id, a.nonce, a.ownerUserId, "allowed_thread");
        expect(late).toBe(
          this.answer === "none" || this.answer === "wrong_clicker" || !offered ? "expired" : "already_decided",
        );
        break;
      }
    }
    // Grants in the store match the model's exactly (the late clicks above created none).
    const live = (await h.store.grants.list({ liveOnly: true })).filter((g) => g.threadTs === r.thread.threadTs);
    expect(new Set(live.map((g) => grantKey(g.connectionId, g.borrowerUserId)))).toEqual(m.grants);
  }
  toString = () => `call(${this.tool}, ${JSON.stringify(this.args)}, obo=${this.onBehalfOf}, ${this.answer})`;
}

const user = fc.constantFrom(...USERS);
const pair = fc.tuple(user, user).filter(([a, b]) => a !== b);
const smallJson = fc.dictionary(
  fc.string({ maxLength: 6 }),
  fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.boolean(), fc.constant(null)),
  { maxKeys: 3, noNullPrototype: true },
);
const argsFor = (tool: Tool): fc.Arbitrary<Record<string, unknown>> => {
  const valid: fc.Arbitrary<Record<string, unknown>> =
    tool === "read_item"
      ? fc.record({ id: fc.string({ maxLength: 10 }) })
      : tool === "write_item"
        ? fc.record({ id: fc.string({ maxLength: 10 }), value: fc.string({ maxLength: 10 }) })
        : fc.constant({});
  return fc.oneof({ weight: 4, arbitrary: valid }, { weight: 1, arbitrary: smallJson });
};
const call = fc
  .constantFrom<Tool>("read_item", "read_item", "write_item", "whoami_personal")
  .chain((tool) =>
    fc.tuple(
      fc.constant(tool),
      argsFor(tool),
      fc.oneof({ weight: 4, arbitrary: fc.constant("current" as const) }, { weight: 1, arbitrary: user }),
      fc.constantFrom<Answer>("allow_thread", "allow_once", "deny", "none", "wrong_clicker"),
    ),
  )
  .map(([tool, args, obo, answer]) => new McpCall(tool, args, obo, answer));

const commands = fc.commands<Model, Real, false>(
  [
    user.map((u) => new SetTurn(u)),
    user.map((u) => new SetTurn(u)),
    fc.oneof({ weight: 4, arbitrary: user }, { weight: 1, arbitrary: fc.constant(null) }).map((u) => new Connect(u)),
    pair.map(([o, b]) => new Grant(o, b)),
    fc
      .oneof({ weight: 4, arbitrary: user }, { weight: 1, arbitrary: fc.constant(null) })
      .map((u) => new RevokeConnection(u)),
    pair.map(([o, b]) => new RevokeGrant(o, b)),
    call,
    call,
    call,
    call,
    call,
  ],
  { maxCommands: MAX_COMMANDS, size: "max" },
);
/** Who has connected before the sequence starts (more runs reach the interesting states). */
const initialConnects = fc.subarray<User | null>([ALICE, BOB, CAROL, null]);

let h: Harness;
beforeAll(async () => {
  h = await makeHarness({ approvalTimeoutMs: APPROVAL_TIMEOUT_MS });
});
afterAll(async () => {
  await h.close();
});

describe("command sequences through the real broker", () => {
  it("every call that runs, runs on a connection the live caller may use, with that owner's credential", async () => {
    let run = 0;
    const totals = { runs: 0, commands: 0, calls: 0, ran: 0 };
    const started = Date.now();
    await fc.assert(
      fc.asyncProperty(initialConnects, commands, async (initial, cmds) => {
        run++;
        const thread: ThreadRef = { ...THREAD, threadTs: `1700002000.${String(run).padStart(6, "0")}` };
        const s = await h.session(thread);
        s.turn.user = ALICE;
        const model: Model = { turn: ALICE, conns: [], grants: new Set(), calls: 0, ran: 0 };
        const real: Real = {
          h,
          thread,
          client: s.client,
          turn: s.turn,
          lastSeq: Math.max(0, ...(await h.store.audit.query({ take: "latest", limit: 1 })).map((x) => x.seq)),
        };
        try {
          await fc.asyncModelRun(() => ({ model, real }), [...initial.map((u) => new Connect(u)), ...cmds]);
        } finally {
          totals.runs++;
          totals.commands += initial.length + [...cmds].length;
          totals.calls += model.calls;
          totals.ran += model.ran;
          // Leave nothing usable behind for the next run (the shared connection is team-wide).
          for (const c of model.conns)
            if (c.active) await h.lifecycle.revoke(c.id, c.owner ?? "cli:test", "end of run");
          await s.close();
        }
      }),
      { numRuns: RUNS },
    );
    // Keep the test honest: it must actually have exercised runs, borrows and refusals.
    const byDecision = new Map<string, number>();
    for (const row of await h.store.audit.query({ event: "call", limit: 1_000_000 }))
      byDecision.set(String(row.decision), (byDecision.get(String(row.decision)) ?? 0) + 1);
    console.log(
      `sequences: ${totals.runs} runs, ${totals.commands} commands, ${totals.calls} calls, ${totals.ran} ran`,
      Object.fromEntries(byDecision),
      `${Date.now() - started} ms`,
    );
    expect(totals.ran).toBeGreaterThan(0);
    expect(byDecision.get("own") ?? 0).toBeGreaterThan(0);
  }, 180_000);
});
