import { describe, expect, it, vi } from "vitest";
import { ManualClock } from "../../src/clock/clock.js";
import { ALICE, aliceThreadConnection, mcpCall } from "../integration/broker-harness.js";
import { openOn, pgCluster, replica, reportTurn, useMcpReplicas } from "../support/mcp-replicas.js";

// The call rate across replicas (issue 20 item 9): two real apps on one real PostgreSQL share one
// bucket per user, so a round-robin balancer cannot double anyone's rate. Real SDK clients over
// Streamable HTTP, the fixture vendor as real children, one manual clock for both replicas.

useMcpReplicas();

describe("call rate across replicas on PostgreSQL", () => {
  it("a user's calls spread over two replicas spend one bucket: the third is refused on either, with one retry time", async () => {
    const url = await pgCluster().createDatabase();
    const clock = new ManualClock(Date.now());
    const env = { SLAUDE_CALL_RATE_PER_USER: "2/min", SLAUDE_CALL_RATE_PER_TEAM: "100/min" };
    const a = await replica(url, env, clock);
    const b = await replica(url, env, clock);
    await aliceThreadConnection(a.lifecycle);
    await reportTurn(a);
    await reportTurn(b);
    const onA = (await openOn(a)).client;
    const onB = (await openOn(b)).client;
    const echo = (c: typeof onA) => mcpCall(c, { tool: "echo", args: { text: "hi" }, on_behalf_of: ALICE });
    expect((await echo(onA)).structured.status).toBe("ok");
    expect((await echo(onB)).structured.status).toBe("ok");
    const retryAt = new Date(clock.now() + 30_000).toISOString();
    const onBRefused = await echo(onB);
    expect(onBRefused.structured).toMatchObject({ code: "rate_limited", retryAt, retryAfterSeconds: 30 });
    expect((await echo(onA)).structured).toMatchObject({ code: "rate_limited", retryAt });
    // Each replica counts the refusals it made, by limit kind only.
    expect((await a.metrics.text()).body).toMatch(/slaude_limit_refusals_total\{limit="call_rate_user"\} 1/);
    clock.advance(30_000);
    expect((await echo(onA)).structured.status).toBe("ok");
    expect((await echo(onB)).structured.code).toBe("rate_limited");
  });

  it("a refused call on PostgreSQL, whose own-row and pin reads go ahead of the bucket statement, writes no row and starts nothing", async () => {
    const url = await pgCluster().createDatabase();
    const clock = new ManualClock(Date.now());
    const a = await replica(url, { SLAUDE_CALL_RATE_PER_USER: "1/min", SLAUDE_CALL_RATE_PER_TEAM: "100/min" }, clock);
    await aliceThreadConnection(a.lifecycle);
    await reportTurn(a);
    const client = (await openOn(a)).client;
    const echo = () => mcpCall(client, { tool: "echo", args: { text: "hi" }, on_behalf_of: ALICE });
    expect((await echo()).structured.status).toBe("ok");
    const rows = await a.store.audit.count();
    const started = await a.store.audit.count({ event: "call_started" });
    // The first refusal read the caller's own row with its turn (the bucket statement, sent with the
    // started row it would have committed, refused both); refused again while this replica
    // remembers the refusal, the call reads nothing ahead. (The read ahead is the proved one, what
    // the warm memo keeps; the memo did not serve this call: the first call recorded the tool's pin
    // after its rows were read, so their proof no longer holds.)
    const ownReads = vi.spyOn(a.store.connections, "ownConnection");
    const provedReads = vi.spyOn(a.store.connections, "ownConnectionProved");
    expect((await echo()).structured.code).toBe("rate_limited");
    expect(ownReads.mock.calls.length + provedReads.mock.calls.length).toBe(1);
    for (let i = 0; i < 2; i++) {
      ownReads.mockClear();
      provedReads.mockClear();
      expect((await echo()).structured.code).toBe("rate_limited");
      expect(ownReads).not.toHaveBeenCalled();
      expect(provedReads).not.toHaveBeenCalled();
    }
    ownReads.mockRestore();
    provedReads.mockRestore();
    // The same rows as a refusal wrote before the reads were overlapped: none at all.
    expect(await a.store.audit.count()).toBe(rows);
    expect(await a.store.audit.count({ event: "call_started" })).toBe(started);
    clock.advance(60_000);
    expect((await echo()).structured.status).toBe("ok");
    expect(await a.store.audit.count({ event: "call_started" })).toBe(started + 1);
  });
});
