import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ALICE, BOB, CAROL, type Harness, makeHarness, mcpCall, THREAD } from "./broker-harness.js";

// The identity regression (brief §1, field notes B1) and the resolution matrix, end to end
// through a real MCP client, the real policy, the real vault and real vendor child processes.

let h: Harness;
beforeEach(async () => {
  h = await makeHarness();
});
afterEach(async () => {
  await h.close();
});

function ranAs(text: string): string {
  return (JSON.parse(text.split("\n")[0]!) as { ranAs: string }).ranAs;
}

describe("live caller identity", () => {
  it("a session opened during A's turn never runs B's call on A's connection without consent", async () => {
    await h.connect(ALICE);
    const s = await h.session();
    s.turn.user = ALICE;
    const a = await mcpCall(s.client, { tool: "read_item", args: { id: "1" }, on_behalf_of: ALICE });
    expect(a.structured.ranAs).toBe("own");
    expect(ranAs(a.text)).toBe(ALICE);

    // B's turn now, same session: the approval channel is asked, and a denial means nothing runs.
    s.turn.user = BOB;
    const pending = mcpCall(s.client, { tool: "read_item", args: { id: "2" }, on_behalf_of: BOB });
    const { approval, card } = await h.approvals.nextCard();
    expect(approval.ownerUserId).toBe(ALICE);
    expect(approval.borrowerUserId).toBe(BOB);
    expect(card.tool).toBe("read_item");
    expect(card.keyArgs).toEqual([["id", "2"]]);
    expect(await h.approvalService.decide(approval.id, approval.nonce, ALICE, "denied")).toBe("applied");
    const b = await pending;
    expect(b.isError).toBe(true);
    expect(b.structured.code).toBe("approval_denied");
    const calls = await h.store.audit.query({ event: "call" });
    expect(calls.map((c) => c.callerUserId)).toEqual([ALICE]);
  });

  it("on_behalf_of is only a cross-check: a mismatch is refused and names whose turn it is", async () => {
    await h.connect(ALICE);
    const s = await h.session();
    s.turn.user = BOB;
    const r = await mcpCall(s.client, { tool: "read_item", args: { id: "1" }, on_behalf_of: ALICE });
    expect(r.structured.code).toBe("on_behalf_of_mismatch");
    expect(r.text).toContain(BOB);
    expect(h.approvals.asked).toHaveLength(0);
  });

  it("a caller who is not a channel member is refused", async () => {
    await h.connect(CAROL);
    const s = await h.session();
    s.turn.user = CAROL;
    const r = await mcpCall(s.client, { tool: "read_item", args: { id: "1" }, on_behalf_of: CAROL });
    expect(r.structured.code).toBe("not_member");
  });

  it("an embedded session cannot switch threads", async () => {
    await h.connect(ALICE);
    let thread: { teamId: string; channelId: string; threadTs: string } = { ...THREAD };
    const s = await h.broker.connectEmbedded(() => ({ ...thread, userId: ALICE }));
    const first = await mcpCall(s.client, { tool: "echo", args: { text: "hi" }, on_behalf_of: ALICE });
    expect(first.structured.status).toBe("ok");
    thread = { ...THREAD, threadTs: "1700000000.000999" };
    const second = await mcpCall(s.client, { tool: "echo", args: { text: "hi" }, on_behalf_of: ALICE });
    expect(second.structured.code).toBe("thread_mismatch");
    await s.close();
  });
});

describe("resolution matrix", () => {
  it("own connection runs as own", async () => {
    await h.connect(ALICE);
    await h.connect(BOB);
    const s = await h.session();
    s.turn.user = BOB;
    const r = await mcpCall(s.client, { tool: "read_item", args: { id: "x" }, on_behalf_of: BOB });
    expect(r.structured.ranAs).toBe("own");
    expect(ranAs(r.text)).toBe(BOB);
  });

  it("borrow with a thread grant runs silently; a write under the grant asks again and forwards only the approved args", async () => {
    await h.connect(ALICE);
    const s = await h.session();
    s.turn.user = BOB;
    const first = mcpCall(s.client, { tool: "read_item", args: { id: "1" }, on_behalf_of: BOB });
    const c1 = await h.approvals.nextCard(0);
    expect(await h.approvalService.decide(c1.approval.id, c1.approval.nonce, ALICE, "allowed_thread")).toBe("applied");
    const r1 = await first;
    expect(r1.structured.ranAs).toBe("approval_thread");
    expect(ranAs(r1.text)).toBe(ALICE);

    const r2 = await mcpCall(s.client, { tool: "read_item", args: { id: "2" }, on_behalf_of: BOB });
    expect(r2.structured.ranAs).toBe("grant");
    expect(h.approvals.asked).toHaveLength(1);

    const write = mcpCall(s.client, { tool: "write_item", args: { id: "9", value: "v" }, on_behalf_of: BOB });
    const c2 = await h.approvals.nextCard(1);
    expect(c2.card.reason).toBe("write_under_grant");
    expect(c2.card.keyArgs).toEqual([
      ["id", "9"],
      ["value", "v"],
    ]);
    expect(await h.approvalService.decide(c2.approval.id, c2.approval.nonce, ALICE, "allowed_once")).toBe("applied");
    const w = await write;
    expect(w.structured.ranAs).toBe("approval_once");
    expect(w.text).toContain('"value":"v"');
    // The same approval cannot be consumed again.
    expect(await h.approvalService.consume(c2.approval, c2.approval.argsHash)).toBe(false);
  });

  it("a non-owner click and a replayed click change nothing", async () => {
    await h.connect(ALICE);
    const s = await h.session();
    s.turn.user = BOB;
    const p = mcpCall(s.client, { tool: "read_item", args: { id: "1" }, on_behalf_of: BOB });
    const { approval } = await h.approvals.nextCard();
    expect(await h.approvalService.decide(approval.id, approval.nonce, BOB, "allowed_thread")).toBe("not_owner");
    expect(await h.approvalService.decide(approval.id, "forged-nonce", ALICE, "allowed_thread")).toBe("unknown");
    expect(await h.approvalService.decide(approval.id, approval.nonce, ALICE, "allowed_once")).toBe("applied");
    expect(await h.approvalService.decide(approval.id, approval.nonce, ALICE, "allowed_thread")).toBe(
      "already_decided",
    );
    const r = await p;
    expect(r.structured.ranAs).toBe("approval_once");
    expect(await h.store.grants.list({ liveOnly: true })).toHaveLength(0);
    const rejected = await h.store.audit.query({ event: "approval_rejected_click" });
    expect(rejected.map((e) => e.decision).sort()).toEqual(["already_decided", "not_owner", "unknown"]);
  });

  it("an owner-only (personal) tool is never borrowed, even with a grant", async () => {
    const { connection } = await h.connect(ALICE);
    await h.store.grants.create(
      {
        id: "grant_x",
        connectionId: connection.id,
        ...THREAD,
        ownerUserId: ALICE,
        borrowerUserId: BOB,
        service: "vendor",
        createdAt: Date.now(),
      },
      [],
    );
    const s = await h.session();
    s.turn.user = BOB;
    const r = await mcpCall(s.client, { tool: "whoami_personal", on_behalf_of: BOB });
    expect(r.structured.code).toBe("owner_only");
    expect(h.approvals.asked).toHaveLength(0);
  });

  it("an unclassified tool fails closed: personal and write, never borrowed nor shared", async () => {
    await h.connect(ALICE);
    await h.connect(null);
    const s = await h.session();
    s.turn.user = BOB;
    const r = await mcpCall(s.client, { tool: "not_in_registry", on_behalf_of: BOB });
    expect(r.structured.code).toBe("owner_only");
  });

  it("the shared identity serves non-personal tools and says so; personal tools need connect", async () => {
    await h.connect(null);
    const s = await h.session();
    s.turn.user = BOB;
    const r = await mcpCall(s.client, { tool: "search_shared", on_behalf_of: BOB });
    // The fixture has no such tool: the vendor answers isError, but it ran on the shared identity.
    expect(r.structured.ranAs).toBe("shared");
    expect(r.text).toContain("shared vendor identity");
    const p = await mcpCall(s.client, { tool: "whoami_personal", on_behalf_of: BOB });
    expect(p.structured.code).toBe("needs_connect");
  });

  it("with nothing connected the model is told to call connect", async () => {
    const s = await h.session();
    s.turn.user = BOB;
    const r = await mcpCall(s.client, { tool: "read_item", args: { id: "1" }, on_behalf_of: BOB });
    expect(r.structured.status).toBe("needs_connect");
    expect(r.text).toContain("connect");
  });

  it("an unknown service is refused with the known ones listed", async () => {
    const s = await h.session();
    const r = await mcpCall(s.client, { service: "nope", tool: "x", on_behalf_of: ALICE });
    expect(r.structured.code).toBe("unknown_service");
    expect(r.text).toContain("vendor");
  });

  it("no approval channel: a borrow that needs asking is refused clearly", async () => {
    await h.connect(ALICE);
    h.approvals.available = false;
    const s = await h.session();
    s.turn.user = BOB;
    const r = await mcpCall(s.client, { tool: "read_item", args: { id: "1" }, on_behalf_of: BOB });
    expect(r.structured.code).toBe("approval_unavailable");
  });

  it("revoking a grant takes effect on the next call", async () => {
    const { connection } = await h.connect(ALICE);
    const g = await h.store.grants.create(
      {
        id: "grant_y",
        connectionId: connection.id,
        ...THREAD,
        ownerUserId: ALICE,
        borrowerUserId: BOB,
        service: "vendor",
        createdAt: Date.now(),
      },
      [],
    );
    const s = await h.session();
    s.turn.user = BOB;
    expect((await mcpCall(s.client, { tool: "echo", args: { text: "a" }, on_behalf_of: BOB })).structured.ranAs).toBe(
      "grant",
    );
    await h.store.grants.revoke(g.id, ALICE, Date.now(), []);
    h.approvals.available = false;
    expect((await mcpCall(s.client, { tool: "echo", args: { text: "a" }, on_behalf_of: BOB })).structured.code).toBe(
      "approval_unavailable",
    );
  });
});
