import { describe, expect, it } from "vitest";
import type { RunningApp } from "../../src/app/app.js";
import { type WarmEntry, WarmMemo } from "../../src/server/warm-memo.js";
import type { PostgresStore } from "../../src/store/postgres/pg-store.js";
import type { Connection } from "../../src/store/records.js";
import { ALICE, aliceThreadConnection, BOB, mcpCall, THREAD } from "../integration/broker-harness.js";
import { openOn, pgCluster, raw, replica, reportTurn, THREAD_HEADER, useMcpReplicas } from "../support/mcp-replicas.js";

// The warm memo (src/server/warm-memo.ts): on PostgreSQL a replica remembers the rows a local
// session's warm mcp_call was decided from, and the next call sends no read before the statement
// that commits its call_started row, which proves them unchanged. Two real replicas on one real
// PostgreSQL: every change another replica makes between two calls (the turn passed on, the
// connection revoked, the pin quarantined, the session ended) is answered at the next call exactly
// as without the memo, and the call that found its rows changed left no row behind.

useMcpReplicas();

/** Replicas A and B on a fresh database, Alice's thread connection, her turn, a session on A warmed until its calls are served from memory. */
async function warmOnA() {
  const url = await pgCluster().createDatabase();
  const a = await replica(url);
  const b = await replica(url);
  const conn = await aliceThreadConnection(a.lifecycle);
  await reportTurn(a);
  const { client, id } = await openOn(a);
  const echo = (as = ALICE) => mcpCall(client, { tool: "echo", args: { text: "hi" }, on_behalf_of: as });
  // The first call records the tool's pin after its rows were read; the second is read afresh and remembered.
  for (let i = 0; i < 2; i++) expect((await echo()).structured.status).toBe("ok");
  return { a, b, conn, client, id, echo };
}

/** Counts A's reads ahead (the turn's and the own row's, as a fresh call makes them): a call served from memory makes none. */
function readsAhead(a: RunningApp): { count: () => number } {
  let n = 0;
  const turns = a.broker.turns;
  const resolveProved = turns.resolveProved!.bind(turns);
  turns.resolveProved = (...args) => {
    n++;
    return resolveProved(...args);
  };
  const conns = a.store.connections;
  const ownProved = conns.ownConnectionProved!.bind(conns);
  conns.ownConnectionProved = (q) => {
    n++;
    return ownProved(q);
  };
  return { count: () => n };
}

/** A raw mcp_call of the vendor's echo as Alice in session `id` on `app`, with `args` as given. */
const rawEcho = (app: RunningApp, id: string, args: unknown) =>
  raw(app, id, {
    headers: { "x-slaude-thread": THREAD_HEADER, "mcp-protocol-version": "2025-06-18" },
    body: {
      jsonrpc: "2.0",
      id: 41,
      method: "tools/call",
      params: { name: "mcp_call", arguments: { service: "vendor", tool: "echo", args, on_behalf_of: ALICE } },
    },
  });

const startedRows = (a: RunningApp) => a.store.audit.count({ event: "call_started" });

describe("the warm memo across replicas (PostgreSQL)", () => {
  it("serves a warm call from memory: no read ahead, the rows proved by the start, the answer as before", async () => {
    const { a, echo } = await warmOnA();
    const reads = readsAhead(a);
    const before = await startedRows(a);
    const ok = await echo();
    expect(ok.structured.status).toBe("ok");
    expect(ok.structured.ranAs).toBe("own");
    expect(reads.count()).toBe(0);
    expect(await startedRows(a)).toBe(before + 1);
  });

  it("the turn passed to Bob on B: A's next call as Alice is refused as without the memo, and wrote no started row", async () => {
    const { a, b, echo } = await warmOnA();
    await reportTurn(b, BOB);
    const before = await startedRows(a);
    const reads = readsAhead(a);
    const refused = await echo();
    expect(refused.structured.code).toBe("on_behalf_of_mismatch");
    // Read afresh (the memo's proof failed), and nothing started for the attempt that found it so.
    expect(reads.count()).toBeGreaterThan(0);
    expect(await startedRows(a)).toBe(before);
  });

  it("the connection revoked on B: A's next call does not run on it", async () => {
    const { a, b, conn, echo } = await warmOnA();
    expect(await b.lifecycle.revoke(conn.id, "admin")).toBeDefined();
    const before = await startedRows(a);
    const refused = await echo();
    expect(refused.structured.status).not.toBe("ok");
    expect(refused.structured.code).toBe("needs_connect");
    expect(await startedRows(a)).toBe(before);
  });

  it("the pin quarantined on B: A's next call is refused by the pin", async () => {
    const { a, b, echo } = await warmOnA();
    const q = await (b.store as PostgresStore).db.query(
      `UPDATE tool_pins SET status = 'quarantined', pending_hash = 'changed', pending_definition = '{}'
       WHERE team_id = $1 AND tool = 'echo'`,
      [THREAD.teamId],
    );
    expect(q.rowCount).toBe(1);
    const before = await startedRows(a);
    const refused = await echo();
    expect(refused.structured.code).toBe("tool_quarantined");
    expect(await startedRows(a)).toBe(before);
  });

  it("the session ended through B: A answers its next request 404, as without the memo", async () => {
    const { a, b, id } = await warmOnA();
    const ended = await raw(b, id, { method: "DELETE", headers: { "x-slaude-thread": THREAD_HEADER } });
    expect(ended.status).toBe(200);
    const before = await startedRows(a);
    const call = await rawEcho(a, id, { text: "hi" });
    expect(call.status).toBe(404);
    expect(await startedRows(a)).toBe(before);
  });
});

describe("requests the memo does not try", () => {
  it("an mcp_call whose arguments the SDK refuses before any handler runs is answered at once, as without the memo", async () => {
    const { a, id, echo } = await warmOnA();
    const call = await rawEcho(a, id, "not an object");
    expect(call.status).toBe(200);
    expect(call.body).toMatch(/isError|error/);
    // The session still answers, from memory again.
    expect((await echo()).structured.status).toBe("ok");
  });
});

describe("the memo's bounds", () => {
  const entry = (caller: string, at: number): WarmEntry => ({
    record: {} as WarmEntry["record"],
    threadKey: "T1/C1/1.1",
    later: () => ({ kind: "caller", userId: caller }),
    caller,
    service: "vendor",
    tool: "echo",
    own: { status: "active", expiresAt: at + 60_000 } as Connection,
    pin: undefined,
    proofs: [],
    at,
  });
  const req = (caller: string) => ({ turnId: undefined, caller, service: "vendor", tool: "echo" });

  it("holds at most its cap (the oldest session's rows go first) and tries rows for at most their age", () => {
    const memo = new WarmMemo(2, 1_000);
    memo.set("s1", entry(ALICE, 0));
    memo.set("s2", entry(ALICE, 0));
    memo.set("s3", entry(ALICE, 0));
    expect(memo.size).toBe(2);
    expect(memo.attempt("s1", req(ALICE), 10, 0)).toBeUndefined();
    expect(memo.attempt("s3", req(ALICE), 10, 0)).toBeDefined();
    expect(memo.attempt("s3", req(ALICE), 1_001, 0)).toBeUndefined();
    expect(memo.size).toBe(1);
  });

  it("serves only the call its rows were read for, while its turn names that caller and its own row is usable", () => {
    const memo = new WarmMemo(10, 60_000);
    memo.set("s", entry(ALICE, 0));
    expect(memo.attempt("s", req(BOB), 10, 0)).toBeUndefined();
    expect(memo.attempt("s", { ...req(ALICE), tool: "other" }, 10, 0)).toBeUndefined();
    expect(memo.attempt("s", req(ALICE), 10, 0)?.ahead.facts?.proofs).toEqual([]);
    // The own row expired by the clock: read afresh.
    expect(memo.attempt("s", req(ALICE), 60_000, 0)).toBeUndefined();
    memo.set("t", { ...entry(ALICE, 0), later: () => undefined });
    expect(memo.attempt("t", req(ALICE), 10, 0)).toBeUndefined();
  });
});
