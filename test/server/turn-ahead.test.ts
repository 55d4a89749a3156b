import { describe, expect, it } from "vitest";
import type { RunningApp } from "../../src/app/app.js";
import { threadKey } from "../../src/turns/turn-rules.js";
import { aliceThreadConnection, THREAD } from "../integration/broker-harness.js";
import {
  OTHER_THREAD_HEADER,
  openOn,
  pgCluster,
  raw,
  replica,
  reportTurn,
  THREAD_HEADER,
  useMcpReplicas,
} from "../support/mcp-replicas.js";

// The turn read ahead (src/server/turn-ahead.ts): with shared session records the MCP endpoint
// starts a tool call's turn read while it looks the session up, and the tool handler uses it only
// for the thread the session is bound to. Real replicas on a real PostgreSQL, a real SDK client and
// raw requests; each turn read is recorded with how many sessions were busy when it was sent (the
// endpoint marks the request's session busy only after the lookup).

useMcpReplicas();

/** Records each turn read of `app`: its thread and the busy-session count when it was sent. */
function recordTurnReads(app: RunningApp): { thread: string; busy: number }[] {
  const reads: { thread: string; busy: number }[] = [];
  const turns = app.broker.turns;
  const resolve = turns.resolve.bind(turns);
  turns.resolve = (thread, turnId, now) => {
    reads.push({ thread: threadKey(thread), busy: app.mcp.busySessionCount });
    return resolve(thread, turnId, now);
  };
  return reads;
}

describe("the turn read ahead of the session lookup", () => {
  it("a tool call reads its turn once, before the session is looked up, and is answered for that turn's user", async () => {
    const url = await pgCluster().createDatabase();
    const a = await replica(url);
    await aliceThreadConnection(a.lifecycle);
    await reportTurn(a);
    const { client } = await openOn(a);
    const reads = recordTurnReads(a);
    const r = await client.callTool({ name: "connections_list", arguments: {} });
    expect(r.isError, JSON.stringify(r.content)).toBeFalsy();
    // Alice's own connection is listed: the call ran as the turn's user.
    expect((r.structuredContent as { connections: unknown[] }).connections).toHaveLength(1);
    expect(reads).toEqual([{ thread: threadKey(THREAD), busy: 0 }]);
    // Other methods read no turn ahead.
    await client.listTools();
    expect(reads).toHaveLength(1);
  });

  it("a request naming another thread than its session's is refused, and the turn read for it is never used", async () => {
    const url = await pgCluster().createDatabase();
    const a = await replica(url);
    await aliceThreadConnection(a.lifecycle);
    await reportTurn(a);
    const { id } = await openOn(a);
    const reads = recordTurnReads(a);
    const call = { jsonrpc: "2.0", id: 9, method: "tools/call", params: { name: "connections_list", arguments: {} } };
    const refused = await raw(a, id, {
      headers: { "x-slaude-thread": OTHER_THREAD_HEADER, "mcp-protocol-version": "2025-06-18" },
      body: call,
    });
    expect(refused.status).toBe(403);
    expect(refused.body).toContain("another thread");
    // Read ahead for the thread the request named; the session is bound to another, so nothing else ran.
    expect(reads.map((r) => r.thread)).toEqual([OTHER_THREAD_HEADER]);
    const ok = await raw(a, id, {
      headers: { "x-slaude-thread": THREAD_HEADER, "mcp-protocol-version": "2025-06-18" },
      body: call,
    });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatch(/"connections":\[\{/);
    expect(reads.map((r) => r.thread)).toEqual([OTHER_THREAD_HEADER, THREAD_HEADER]);
  });

  it("a token bound to another team reads nothing ahead", async () => {
    const url = await pgCluster().createDatabase();
    const token = "host-bound-elsewhere";
    const a = await replica(url, { SLAUDE_HOST_TOKENS: `T_ELSEWHERE:${token}` });
    const reads = recordTurnReads(a);
    const call = { jsonrpc: "2.0", id: 9, method: "tools/call", params: { name: "connections_list", arguments: {} } };
    const r = await raw(a, "9d5b9a4e-0000-4000-8000-000000000000", {
      headers: { authorization: `Bearer ${token}`, "x-slaude-thread": THREAD_HEADER },
      body: call,
    });
    expect(r.status).toBe(404);
    expect(reads).toEqual([]);
  });
});
