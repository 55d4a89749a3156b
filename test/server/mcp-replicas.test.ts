import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { describe, expect, it, vi } from "vitest";
import { ManualClock } from "../../src/clock/clock.js";
import { ALICE, aliceThreadConnection } from "../integration/broker-harness.js";
import {
  continueOn,
  INITIALIZE,
  keepClient,
  keepDir,
  LIST,
  logOf,
  OTHER_THREAD_HEADER,
  openOn,
  openRaw,
  openStream,
  pgCluster,
  raw,
  rebuilds,
  replica,
  reportTurn,
  THREAD_HEADER,
  TOKEN,
  useMcpReplicas,
} from "../support/mcp-replicas.js";

// MCP sessions any replica serves (issue 14 item 2): real apps ("replicas", each with its own data
// directory and port) on one real PostgreSQL, real SDK clients over Streamable HTTP. A session opened
// on one replica is named, by its id, in requests to another, as a round-robin load balancer would.

useMcpReplicas();

describe("MCP sessions across replicas on one PostgreSQL", () => {
  it("a session opened on A serves tools/list, tools/call and its GET stream on B, rebuilt there once, with the same id", async () => {
    const url = await pgCluster().createDatabase();
    const a = await replica(url);
    const b = await replica(url);
    const { client: onA, id } = await openOn(a);
    expect((await onA.listTools()).tools).toHaveLength(5);

    const { client: onB, transport } = await continueOn(b, id);
    expect(transport.sessionId).toBe(id);
    expect((await onB.listTools()).tools).toHaveLength(5);
    await reportTurn(b);
    const r = await onB.callTool({ name: "mcp_describe", arguments: { service: "vendor", query: "item" } });
    expect((r.structuredContent as { status: string }).status, JSON.stringify(r.structuredContent)).toBe("ok");
    expect(rebuilds(b)).toBe(1);
    expect(rebuilds(a)).toBe(0);

    const stream = await openStream(b, id);
    expect(stream.status).toBe(200);
    expect(stream.contentType).toBe("text/event-stream");
    stream.close();
    // A still serves it too: both hold a transport for the one session.
    expect((await onA.listTools()).tools).toHaveLength(5);
    expect(rebuilds(b)).toBe(1);
  });

  it("DELETE on B ends the session on every replica at once, where a transport is still held too (404 Session not found)", async () => {
    const url = await pgCluster().createDatabase();
    const a = await replica(url);
    const b = await replica(url);
    const c = await replica(url);
    const { id } = await openOn(a);
    for (const app of [b, c]) await (await continueOn(app, id)).client.listTools();
    const standing = await openStream(b, id);
    expect(standing.status).toBe(200);
    expect([a.mcp.sessionCount, c.mcp.sessionCount]).toEqual([1, 1]);

    const del = await raw(b, id, { method: "DELETE" });
    expect(del.status).toBe(200);
    await standing.ended;
    // C still holds a transport: its very next request reads the record and refuses.
    const onC = await raw(c, id, { body: LIST });
    expect(onC.status).toBe(404);
    expect(onC.body).toContain("Session not found");
    await expect.poll(() => c.mcp.sessionCount).toBe(0);
    // A still holds one, with its client's standing GET stream: A's sweep closes it without any request.
    await a.mcp.sweepRecords();
    await expect.poll(() => a.mcp.sessionCount).toBe(0);
    for (const app of [a, b, c]) expect((await raw(app, id, { body: LIST })).status).toBe(404);
  });

  it("B refuses another thread with 403 and an unknown session with 404, like A", async () => {
    const url = await pgCluster().createDatabase();
    const a = await replica(url);
    const b = await replica(url);
    const { id } = await openOn(a);
    for (const app of [b, a]) {
      for (const thread of [OTHER_THREAD_HEADER, "T2/C1/1700000000.000100", "garbage"]) {
        const r = await raw(app, id, { headers: { "x-slaude-thread": thread }, body: LIST });
        expect(r.status, thread).toBe(403);
        expect(r.body).toContain("another thread");
      }
      const unknown = await raw(app, "9d5b9a4e-0000-4000-8000-000000000000", { body: LIST });
      expect(unknown.status).toBe(404);
    }
    // Refusals do not rebuild anything; the session still serves its own thread on B.
    expect(rebuilds(b)).toBe(0);
    const ok = await raw(b, id, { headers: { "x-slaude-thread": THREAD_HEADER }, body: LIST });
    expect(ok.status).toBe(200);
  });

  it("after A stops, B serves the session A opened, with the same id", async () => {
    const url = await pgCluster().createDatabase();
    const a = await replica(url);
    const b = await replica(url);
    const { client: onA, id } = await openOn(a);
    await onA.listTools();
    await a.close();
    const { client: onB } = await continueOn(b, id);
    expect((await onB.listTools()).tools).toHaveLength(5);
    await reportTurn(b);
    const r = await onB.callTool({ name: "mcp_describe", arguments: { service: "vendor", query: "item" } });
    expect((r.structuredContent as { status: string }).status, JSON.stringify(r.structuredContent)).toBe("ok");
  });

  it("idle expiry ends a session on every replica; one used on another replica meanwhile stays", async () => {
    const url = await pgCluster().createDatabase();
    const clock = new ManualClock(Date.now());
    const env = { SLAUDE_MCP_SESSION_IDLE_SECONDS: "60" };
    const a = await replica(url, env, clock);
    const b = await replica(url, env, clock);
    const { id: idle } = await openOn(a);
    const { id: used } = await openOn(a);
    await clock.advanceAsync(40_000);
    // Used on B only: A's own transport for it stays idle, the record does not.
    expect((await raw(b, used, { body: LIST })).status).toBe(200);
    await clock.advanceAsync(40_000);
    // The replicas' own sweeps ran on the clock; one more changes nothing but makes the point explicit.
    await b.mcp.sweepRecords();
    for (const app of [a, b]) expect((await raw(app, idle, { body: LIST })).status).toBe(404);
    expect((await raw(a, used, { body: LIST })).status).toBe(200);
  });

  it("the deployment holds at most SLAUDE_MCP_MAX_LIVE_SESSIONS: none idle, initialize gets 503; later the least recently used idle one ends everywhere", async () => {
    const url = await pgCluster().createDatabase();
    const clock = new ManualClock(Date.now());
    // Idle for room: no use for a touch interval (6 s) plus a sweep interval (15 s).
    const env = { SLAUDE_MCP_SESSION_IDLE_SECONDS: "60", SLAUDE_MCP_MAX_LIVE_SESSIONS: "2" };
    const a = await replica(url, env, clock);
    const b = await replica(url, env, clock);
    const { id: oldest } = await openOn(a);
    const { id: newer } = await openOn(b);
    const refused = await raw(a, "", { headers: { "x-slaude-thread": THREAD_HEADER }, body: INITIALIZE });
    expect(refused.status).toBe(503);
    expect(refused.headers["retry-after"]).toBe("5");
    expect(
      logOf(a).some((l) => l.includes("the deployment's live session cap is reached and no session is idle")),
    ).toBe(true);
    await clock.advanceAsync(25_000);
    expect((await raw(b, newer, { body: LIST })).status).toBe(200); // used: the other one is the least recently used
    const { id: third } = await openOn(b);
    for (const app of [a, b]) expect((await raw(app, oldest, { body: LIST })).status).toBe(404);
    for (const id of [newer, third]) expect((await raw(a, id, { body: LIST })).status).toBe(200);
    expect(logOf(b).some((l) => l.includes("mcp sessions ended to make room"))).toBe(true);
  });

  it("concurrent first requests on B are all served by one rebuilt transport; a DELETE to a replica that never served the session is served", async () => {
    const url = await pgCluster().createDatabase();
    const a = await replica(url);
    const b = await replica(url);
    const { id: first } = await openOn(a);
    const { id: second } = await openOn(a);
    const answers = await Promise.all(
      Array.from({ length: 5 }, (_, i) => raw(b, first, { body: { ...LIST, id: 100 + i } })),
    );
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(rebuilds(b)).toBe(1);
    expect(b.mcp.sessionCount).toBe(1);

    const del = await raw(b, second, { method: "DELETE" });
    expect(del.status).toBe(200);
    for (const app of [a, b]) expect((await raw(app, second, { body: LIST })).status).toBe(404);
    expect((await raw(a, first, { body: LIST })).status).toBe(200);
  });

  it("a transport evicted at the local cap is rebuilt from its live record on the same replica", async () => {
    const url = await pgCluster().createDatabase();
    const a = await replica(url, { SLAUDE_MCP_MAX_SESSIONS: "1" });
    // Raw opens: an SDK client's background GET stream could land after the second open and rebuild the first.
    const first = await openRaw(a);
    const second = await openRaw(a);
    expect(a.mcp.sessionCount).toBe(1);
    expect((await raw(a, first, { body: LIST })).status).toBe(200);
    expect(rebuilds(a)).toBe(1);
    expect((await raw(a, second, { body: LIST })).status).toBe(200);
    expect(a.mcp.sessionCount).toBe(1);
  });

  it("a client's cancel that lands on B aborts the call running on A: the vendor is told at once", async () => {
    const url = await pgCluster().createDatabase();
    const events = path.join(mkdtempSync(path.join(os.tmpdir(), "slaude-cancel-")), "vendor-events.log");
    keepDir(path.dirname(events));
    const a = await replica(url, {}, undefined, { VENDOR_EVENT_LOG: events });
    const b = await replica(url, {}, undefined, { VENDOR_EVENT_LOG: events });
    await aliceThreadConnection(a.lifecycle);
    await reportTurn(a);
    // The host's client talks to A, but its cancellation POST goes to B, as a round-robin balancer sends it.
    let cancelsToB = 0;
    const viaBalancer: typeof fetch = (input, init) => {
      if (typeof init?.body === "string" && init.body.includes('"notifications/cancelled"')) {
        cancelsToB++;
        return fetch(`${b.url}/mcp`, init);
      }
      return fetch(input, init);
    };
    const transport = new StreamableHTTPClientTransport(new URL(`${a.url}/mcp`), {
      fetch: viaBalancer,
      requestInit: { headers: { Authorization: `Bearer ${TOKEN}`, "X-Slaude-Thread": THREAD_HEADER } },
    });
    const client = new Client({ name: "replica-host", version: "1" });
    await client.connect(transport);
    keepClient(client);
    // A 20 s vendor call on A, cancelled by the user once its first progress shows the vendor is at work.
    const ac = new AbortController();
    const slow = { service: "vendor", tool: "slow", args: { steps: 200, delayMs: 100 }, on_behalf_of: ALICE };
    const call = client.callTool({ name: "mcp_call", arguments: slow }, undefined, {
      signal: ac.signal,
      onprogress: () => ac.abort("the user gave up"),
      timeout: 60_000,
    });
    await expect(call).rejects.toThrow();
    expect(cancelsToB).toBe(1);
    const lines = () => (existsSync(events) ? readFileSync(events, "utf8").split("\n") : []);
    await vi.waitFor(() => expect(lines().some((l) => /^cancelled \d+$/.test(l))).toBe(true), {
      timeout: 10_000,
      interval: 50,
    });
  });
});
