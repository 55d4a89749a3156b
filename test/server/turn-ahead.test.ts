import { describe, expect, it, vi } from "vitest";
import type { RunningApp } from "../../src/app/app.js";
import { threadKey } from "../../src/turns/turn-rules.js";
import { ALICE, aliceThreadConnection, BOB, mcpCall, THREAD } from "../integration/broker-harness.js";
import {
  OTHER_THREAD_HEADER,
  openOn,
  pgCluster,
  raw,
  replica,
  reportTurn,
  THREAD_HEADER,
  TOKEN,
  useMcpReplicas,
} from "../support/mcp-replicas.js";

// The turn read ahead (src/server/turn-ahead.ts): with shared session records the MCP endpoint
// starts a tool call's turn read while it looks the session up, and the tool handler uses it only
// for the thread the session is bound to. Real replicas on a real PostgreSQL, a real SDK client and
// raw requests; each turn read is recorded with how many sessions were busy when it was sent (the
// endpoint marks the request's session busy only after the lookup). A read ahead is made only for a
// session this replica holds, opened by the same host token, named with its own thread.

useMcpReplicas();

/** A raw tools/call of connections_list. */
const LIST_CONNECTIONS = {
  jsonrpc: "2.0",
  id: 9,
  method: "tools/call",
  params: { name: "connections_list", arguments: {} },
};
/** The headers of a raw request of a session in `thread` (its X-Slaude-Thread value). */
const inThread = (thread: string) => ({ "x-slaude-thread": thread, "mcp-protocol-version": "2025-06-18" });

/** Records each turn read of `app`: its thread and the busy-session count when it was sent. */
function recordTurnReads(app: RunningApp): { thread: string; busy: number }[] {
  const reads: { thread: string; busy: number }[] = [];
  const turns = app.broker.turns;
  const resolve = turns.resolve.bind(turns);
  turns.resolve = (thread, turnId, now) => {
    reads.push({ thread: threadKey(thread), busy: app.mcp.busySessionCount });
    return resolve(thread, turnId, now);
  };
  // The read ahead of a session's tool call is the proved one (what the warm memo keeps): the same one read.
  const proved = turns.resolveProved?.bind(turns);
  if (proved)
    turns.resolveProved = (thread, turnId, now) => {
      reads.push({ thread: threadKey(thread), busy: app.mcp.busySessionCount });
      return proved(thread, turnId, now);
    };
  return reads;
}

/** A replica on a fresh database: Alice's thread connection and turn, a session open, its turn reads recorded from now. */
async function aliceSession() {
  const a = await replica(await pgCluster().createDatabase());
  await aliceThreadConnection(a.lifecycle);
  await reportTurn(a);
  const { client } = await openOn(a);
  return { a, client, reads: recordTurnReads(a) };
}

describe("the turn read ahead of the session lookup", () => {
  it("a tool call reads its turn once, before the session is looked up, and is answered for that turn's user", async () => {
    const { client, reads } = await aliceSession();
    const r = await client.callTool({ name: "connections_list", arguments: {} });
    expect(r.isError, JSON.stringify(r.content)).toBeFalsy();
    // Alice's own connection is listed: the call ran as the turn's user.
    expect((r.structuredContent as { connections: unknown[] }).connections).toHaveLength(1);
    expect(reads).toEqual([{ thread: threadKey(THREAD), busy: 0 }]);
    // Other methods read no turn ahead.
    await client.listTools();
    expect(reads).toHaveLength(1);
  });

  it("a request naming another thread than its session's is refused, and nothing is read ahead for it", async () => {
    const url = await pgCluster().createDatabase();
    const a = await replica(url);
    await aliceThreadConnection(a.lifecycle);
    await reportTurn(a);
    const { id } = await openOn(a);
    const reads = recordTurnReads(a);
    const refused = await raw(a, id, {
      headers: inThread(OTHER_THREAD_HEADER),
      body: LIST_CONNECTIONS,
    });
    expect(refused.status).toBe(403);
    expect(refused.body).toContain("another thread");
    expect(reads).toEqual([]);
    const ok = await raw(a, id, {
      headers: inThread(THREAD_HEADER),
      body: LIST_CONNECTIONS,
    });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatch(/"connections":\[\{/);
    expect(reads).toEqual([{ thread: threadKey(THREAD), busy: 0 }]);
  });

  it("a session this replica does not hold reads nothing ahead: its turn is read once the session is looked up", async () => {
    const url = await pgCluster().createDatabase();
    const a = await replica(url);
    const b = await replica(url);
    await aliceThreadConnection(a.lifecycle);
    await reportTurn(b);
    const { id } = await openOn(a);
    const reads = recordTurnReads(b);
    const headers = inThread(THREAD_HEADER);
    const first = await raw(b, id, { headers, body: LIST_CONNECTIONS });
    expect(first.status).toBe(200);
    expect(first.body).toMatch(/"connections":\[\{/);
    expect(reads).toEqual([{ thread: threadKey(THREAD), busy: 1 }]);
    // B holds it now (rebuilt from its record): the next call's turn is read ahead.
    expect((await raw(b, id, { headers, body: { ...LIST_CONNECTIONS, id: 10 } })).status).toBe(200);
    expect(reads).toEqual([
      { thread: threadKey(THREAD), busy: 1 },
      { thread: threadKey(THREAD), busy: 0 },
    ]);
  });

  it("another host token's request for a session held here reads nothing ahead, and is refused", async () => {
    const url = await pgCluster().createDatabase();
    const other = "host-other-token";
    const a = await replica(url, { SLAUDE_HOST_TOKENS: `${TOKEN},${other}` });
    await reportTurn(a);
    const { id } = await openOn(a);
    const reads = recordTurnReads(a);
    const r = await raw(a, id, {
      headers: { authorization: `Bearer ${other}`, ...inThread(THREAD_HEADER) },
      body: LIST_CONNECTIONS,
    });
    expect(r.status).toBe(403);
    expect(r.body).toContain("session_token_mismatch");
    expect(reads).toEqual([]);
  });

  it("an mcp_call's own row and pin are read with its turn, once, and used for the caller the turn names", async () => {
    const { a, client, reads } = await aliceSession();
    const own: { caller: string; busy: number }[] = [];
    const ownConnection = a.store.connections.ownConnection.bind(a.store.connections);
    a.store.connections.ownConnection = (q) => {
      own.push({ caller: q.caller, busy: a.mcp.busySessionCount });
      return ownConnection(q);
    };
    // The read ahead is the proved one (what the warm memo keeps): the same own row read.
    const proved = a.store.connections.ownConnectionProved?.bind(a.store.connections);
    if (proved)
      a.store.connections.ownConnectionProved = (q) => {
        own.push({ caller: q.caller, busy: a.mcp.busySessionCount });
        return proved(q);
      };
    const pinReads = vi.spyOn(a.broker.deps.pins, "read");
    const ok = await mcpCall(client, { tool: "echo", args: { text: "hi" }, on_behalf_of: ALICE });
    expect(ok.structured.status).toBe("ok");
    // Both sent before the session lookup (no session busy yet), and not read a second time: the
    // one pin read served the policy's gate and the run-stage check.
    expect(reads).toEqual([{ thread: threadKey(THREAD), busy: 0 }]);
    expect(own).toEqual([{ caller: ALICE, busy: 0 }]);
    expect(pinReads).toHaveBeenCalledTimes(1);
    // A claim the turn does not confirm: what was read for Bob is dropped, the caller's own row is
    // read for Alice, and the policy refuses the mismatch as before.
    own.length = 0;
    pinReads.mockClear();
    const claimed = await mcpCall(client, { tool: "echo", args: { text: "hi" }, on_behalf_of: BOB });
    expect(claimed.structured.code).toBe("on_behalf_of_mismatch");
    expect(own.map((r) => r.caller)).toEqual([BOB, ALICE]);
    expect(pinReads).toHaveBeenCalledTimes(2);
    pinReads.mockRestore();
  });
});
