import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { ThreadRef } from "../../src/domain/thread.js";
import { ALICE, BOB, type Harness, makeHarness, mcpCall, THREAD } from "./broker-harness.js";

// Limits per tenant through the real broker (issue 20 item 9): real MCP sessions, the fixture
// vendor as real children, the ManualClock as the broker's time. Team A at its call rate or its
// children cap; team B's calls go through meanwhile. Outcomes and ordering only, no timings.

const THREAD_B: ThreadRef = { teamId: "T2", channelId: "C2", threadTs: "1700000000.000200" };
const DAVE = "UDAVE004";
const perMin = (n: number) => ({ burst: n, perMs: n / 60_000 });

const open: Harness[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const h of open.splice(0)) await h.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function twoTeams(o: Parameters<typeof makeHarness>[0]) {
  const h = await makeHarness(o);
  open.push(h);
  h.membership.add(THREAD_B.teamId, THREAD_B.channelId, DAVE);
  await h.connect(ALICE);
  await h.connect(BOB);
  await h.connect(DAVE, { thread: THREAD_B });
  const a = await h.session();
  const b = await h.session(THREAD_B);
  b.turn.user = DAVE;
  return { h, a, b };
}

describe("call rate per user and per team", () => {
  it("a user over their rate is refused rate_limited with a retry time, and team B's calls run meanwhile", async () => {
    const { h, a, b } = await twoTeams({ tenantLimits: { callRate: { perUser: perMin(2), perTeam: perMin(100) } } });
    const echo = (s: typeof a, who: string) =>
      mcpCall(s.client, { tool: "echo", args: { text: "hi" }, on_behalf_of: who });
    expect((await echo(a, ALICE)).structured.status).toBe("ok");
    expect((await echo(a, ALICE)).structured.status).toBe("ok");
    const callsBefore = await h.store.audit.count({ event: "call_started" });
    const refused = await echo(a, ALICE);
    expect(refused.isError).toBe(true);
    expect(refused.structured).toMatchObject({
      status: "refused",
      code: "rate_limited",
      retryAfterSeconds: 30,
      retryAt: new Date(h.clock.now() + 30_000).toISOString(),
    });
    expect(refused.text).toContain("You are making calls faster than your limit allows");
    expect(refused.text).toContain(`Try again after ${new Date(h.clock.now() + 30_000).toISOString()} (in 30 s)`);
    // Nothing reached the vendor.
    expect(await h.store.audit.count({ event: "call_started" })).toBe(callsBefore);
    // Right after A's refusal, team B's call runs (and so does A's other user).
    expect((await echo(b, DAVE)).structured.status).toBe("ok");
    a.turn.user = BOB;
    expect((await echo(a, BOB)).structured.status).toBe("ok");
    // At the retry time Alice's call runs again.
    a.turn.user = ALICE;
    h.clock.advance(30_000);
    expect((await echo(a, ALICE)).structured.status).toBe("ok");
  });

  it("a team over its rate refuses every user of it; the other team is not slowed", async () => {
    const { a, b } = await twoTeams({ tenantLimits: { callRate: { perUser: perMin(5), perTeam: perMin(3) } } });
    const echo = (s: typeof a, who: string) =>
      mcpCall(s.client, { tool: "echo", args: { text: "hi" }, on_behalf_of: who });
    for (const who of [ALICE, ALICE, BOB]) {
      a.turn.user = who;
      expect((await echo(a, who)).structured.status).toBe("ok");
    }
    a.turn.user = ALICE;
    const refused = await echo(a, ALICE);
    expect(refused.structured.code).toBe("rate_limited");
    expect(refused.text).toContain("This workspace is making calls faster than its limit allows");
    // Team B has its own whole bucket: its 3 calls all run.
    for (let i = 0; i < 3; i++) expect((await echo(b, DAVE)).structured.status).toBe("ok");
  });
});

describe("vendors per team", () => {
  it("team A holding its children cap makes A's next call wait, while team B's call completes first", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-tenant-"));
    dirs.push(dir);
    const gate = path.join(dir, "gate");
    const { h, a, b } = await twoTeams({
      tenantLimits: { childrenPerTeam: 1 },
      pool: { maxChildren: 4, idleMs: 60_000, acquireTimeoutMs: 5_000, stopGraceMs: 500 },
    });
    // Alice's call holds team A's only vendor slot.
    const held = mcpCall(a.client, { tool: "wait_for_file", args: { path: gate }, on_behalf_of: ALICE });
    await expect.poll(() => h.store.audit.count({ event: "call_started" }), { timeout: 20_000, interval: 20 }).toBe(1);
    // Bob (team A, his own connection) must wait for A's slot: the manual clock never times him out.
    const order: string[] = [];
    const bobs = (async () => {
      const other = await h.session(THREAD);
      other.turn.user = BOB;
      const r = await mcpCall(other.client, { tool: "echo", args: { text: "bob" }, on_behalf_of: BOB });
      order.push("bob");
      return r;
    })();
    await expect.poll(() => h.broker.pool.stats().waiting, { timeout: 20_000, interval: 20 }).toBe(1);
    // Dave (team B) arrives after Bob and completes while Bob still waits.
    const dave = await mcpCall(b.client, { tool: "echo", args: { text: "dave" }, on_behalf_of: DAVE });
    order.push("dave");
    expect(dave.structured.status).toBe("ok");
    expect(h.broker.pool.stats().waiting).toBe(1);
    writeFileSync(gate, "");
    expect((await held).structured.status).toBe("ok");
    expect((await bobs).structured.status).toBe("ok");
    expect(order).toEqual(["dave", "bob"]);
  });
});
