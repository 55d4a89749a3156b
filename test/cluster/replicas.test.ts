// Three real broker replicas (`slaude-connect serve`) on one real PostgreSQL behind a round-robin
// balancer with no stickiness (issue 14, "How it is proven"): migrations run once, a turn and an
// MCP session are good on every replica, the borrow story works when the owner's click lands on
// a replica other than the one holding the waiting call, a CLI revoke stops the vendor on every
// replica, and concurrent load through the balancer all succeeds. Each test isolates what it
// proves where it can (direct requests to one replica stand in for what another test covers).
import { readdirSync } from "node:fs";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { callHash } from "../../src/policy/args-hash.js";
import { runBin } from "../cli/run.js";
import { mcpCall } from "../integration/broker-harness.js";
import { waitFor } from "../support/proc.js";
import { approvalCard, sessionIdOf } from "../support/replicas.js";
import {
  ALICE,
  addConnection,
  BOB,
  type Cluster,
  LOADERS,
  query,
  startCluster,
  vendorsUnder,
} from "./cluster-story.js";

// Real processes on a loaded 2-core machine: generous bounds, no timed assertions.
vi.setConfig({ testTimeout: 120_000, hookTimeout: 180_000 });
const MIGRATIONS = new URL("../../migrations/postgres/", import.meta.url);

let c: Cluster;
const tokens = new Map<string, string>();

beforeAll(async () => {
  c = await startCluster(3);
  for (const owner of [ALICE, ...LOADERS]) tokens.set(owner, (await addConnection(c.set, c.fake.teamId, owner)).token);
});
afterAll(async () => {
  await c?.stop();
});

/** Every session opened here, closed at the end so no GET stream outlives the file. */
const clients: Client[] = [];
async function session(n: number, baseUrl?: string): Promise<Client> {
  const client = await c.set.session(c.thread(n), baseUrl);
  clients.push(client);
  return client;
}
afterAll(async () => {
  for (const cl of clients) await cl.close().catch(() => {});
});

/** The replicas (indexes) that received requests of MCP session `sid`. */
const backendsOf = (sid: string | undefined): Set<number> =>
  new Set(c.set.proxy.routes.filter((r) => r.sessionId === sid).map((r) => r.backend));

describe("three replicas on one PostgreSQL behind a round-robin balancer", () => {
  it("started together, they migrate the database once: each migration recorded once, by one replica, and all are ready", async () => {
    const files = readdirSync(MIGRATIONS)
      .filter((f) => f.endsWith(".sql"))
      .sort();
    const rows = await query<{ version: number }>(c.set, "SELECT version FROM schema_migrations ORDER BY version");
    expect(rows.map((r) => Number(r.version))).toEqual(files.map((f) => Number(f.slice(0, 4))));
    expect(c.set.replicas.filter((r) => r.log().includes("database migrated")).map((r) => r.index)).toHaveLength(1);
    for (const r of c.set.replicas) expect((await fetch(`${r.url}/readyz`)).status).toBe(200);
  });

  it("a turn reported to one replica is in force for the very next call on another", async () => {
    const [a, b] = c.set.replicas;
    await c.set.turn(c.thread(10), LOADERS[0], a!.url);
    // The control: on the replica that was told, the call runs.
    const onA = await session(10, a!.url);
    const control = await mcpCall(onA, {
      service: "stubborn",
      tool: "echo",
      args: { text: "turn on A" },
      on_behalf_of: LOADERS[0],
    });
    expect(control.structured, control.text).toMatchObject({ status: "ok", ranAs: "own" });
    const onB = await session(10, b!.url);
    const r = await mcpCall(onB, {
      service: "stubborn",
      tool: "echo",
      args: { text: "turn from A" },
      on_behalf_of: LOADERS[0],
    });
    expect(r.structured, r.text).toMatchObject({ status: "ok", ranAs: "own" });
  });

  it("an MCP session initialized through the balancer is served by every replica under one id; its thread binding holds on each; GET is served anywhere; after DELETE every replica refuses it", async () => {
    for (const r of c.set.replicas) await c.set.turn(c.thread(11), LOADERS[1], r.url);
    const client = await session(11);
    const sid = sessionIdOf(client);
    expect(sid).toBeTruthy();
    for (let i = 0; i < 6; i++) {
      const r = await mcpCall(client, {
        service: "stubborn",
        tool: "echo",
        args: { text: `s-${i}` },
        on_behalf_of: LOADERS[1],
      });
      expect(r.structured, r.text).toMatchObject({ status: "ok" });
    }
    expect(sessionIdOf(client)).toBe(sid);
    expect(backendsOf(sid)).toEqual(new Set([0, 1, 2]));
    const version = (client.transport as StreamableHTTPClientTransport).protocolVersion ?? "2025-06-18";
    const headers = {
      Authorization: `Bearer ${c.set.hostToken}`,
      "mcp-session-id": sid!,
      "mcp-protocol-version": version,
    };
    const post = { "content-type": "application/json", accept: "application/json, text/event-stream" };
    for (const r of c.set.replicas) {
      // Another thread on the same session id: refused on every replica, not only the first.
      const other = await fetch(`${r.url}/mcp`, {
        method: "POST",
        headers: { ...headers, ...post, "X-Slaude-Thread": `${c.fake.teamId}/CSOMEWHERE/1700000999.000100` },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      });
      expect(other.status, `replica ${r.index}`).toBe(403);
      await other.body?.cancel();
      // A GET stream for the session: served (or refused as a second stream), never "Session not found".
      const abort = new AbortController();
      const get = await fetch(`${r.url}/mcp`, {
        headers: { ...headers, accept: "text/event-stream" },
        signal: abort.signal,
      });
      expect([200, 409], `GET on replica ${r.index}`).toContain(get.status);
      abort.abort();
    }
    await (client.transport as StreamableHTTPClientTransport).terminateSession();
    expect(c.set.proxy.routes.some((r) => r.method === "DELETE" && r.sessionId === sid)).toBe(true);
    for (const r of c.set.replicas) {
      const after = await fetch(`${r.url}/mcp`, {
        method: "POST",
        headers: { ...headers, ...post },
        body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" }),
      });
      expect(after.status, `ended session on replica ${r.index}`).toBe(404);
      await after.body?.cancel();
    }
  });

  it("the borrow story through the balancer: the owner's click (twice, on two other replicas) resumes the call waiting on a third; one decision, one vendor call", async () => {
    const thread = c.thread(12);
    await c.set.turn(thread, ALICE);
    await c.set.turn(thread, BOB);
    const bob = await session(12);
    const args = { id: `borrowed-${Date.now()}` };
    const pending = mcpCall(bob, { service: "stubborn", tool: "read_item", args, on_behalf_of: BOB });
    const card = await approvalCard(c.fake, ALICE, 0);
    const holder = c.set.proxy.routes
      .filter((r) => r.sessionId === sessionIdOf(bob) && r.rpcMethod === "tools/call")
      .at(-1)!.backend;
    const others = c.set.replicas.filter((r) => r.index !== holder);
    // A double click (or a Slack retry) delivered to the two replicas that do not hold the call.
    const clicks = await Promise.all(others.map((r) => c.set.click(card, ALICE, "approval_allow_once", r.url)));
    expect(clicks.map((x) => x.status)).toEqual([200, 200]);
    const r = await pending;
    expect(r.structured, r.text).toMatchObject({ status: "ok", ranAs: "approval_once" });
    const approvals = await query<{ id: string; status: string }>(
      c.set,
      "SELECT id, status FROM approvals WHERE borrower_user_id = $1",
      [BOB],
    );
    expect(approvals).toHaveLength(1);
    expect(approvals[0]!.status).toBe("consumed");
    const decided = await query(
      c.set,
      "SELECT seq FROM audit WHERE event = 'approval_decided' AND approver_user_id = $1",
      [ALICE],
    );
    expect(decided).toHaveLength(1);
    const calls = await query(c.set, "SELECT seq FROM audit WHERE event = 'call' AND args_hash = $1", [
      callHash("stubborn", "read_item", args),
    ]);
    expect(calls).toHaveLength(1);
  });

  it("a revoke from the admin CLI stops that connection's vendor on every replica", async () => {
    const owner = LOADERS[2];
    const conn = await addConnection(c.set, c.fake.teamId, owner, "vendor");
    const direct: Client[] = [];
    for (const rep of c.set.replicas) {
      await c.set.turn(c.thread(13), owner, rep.url);
      const s = await session(13, rep.url);
      direct.push(s);
      const r = await mcpCall(s, { tool: "echo", args: { text: `on ${rep.index}` }, on_behalf_of: owner });
      expect(r.structured, r.text).toMatchObject({ status: "ok" });
      expect(vendorsUnder(rep.dataDir, conn.token).length, `vendor on replica ${rep.index}`).toBeGreaterThan(0);
    }
    const revoked = await runBin(["connections", "revoke", conn.id, "--reason", "replica test"], c.set.cliEnv);
    expect(revoked.code, revoked.stderr).toBe(0);
    // The issue asks for "within a second". 5 s absorbs a loaded machine, yet stays well under the
    // 15 s reconcile poll each replica runs anyway: that poll alone would need all three replicas'
    // timers to fire inside the window (about 1 chance in 27), so only a signal passes reliably.
    const gone = await waitFor(
      () => c.set.replicas.every((rep) => vendorsUnder(rep.dataDir, conn.token).length === 0),
      5_000,
      20,
    );
    expect(
      gone,
      `vendors left: ${c.set.replicas.map((rep) => vendorsUnder(rep.dataDir, conn.token).length).join("/")}`,
    ).toBe(true);
    for (const [i, s] of direct.entries()) {
      const r = await mcpCall(s, { tool: "echo", args: { text: "after revoke" }, on_behalf_of: owner });
      expect(r.structured.status, `replica ${i}`).not.toBe("ok");
    }
  });

  it("concurrent load through the balancer: every call of every session succeeds, and each session reaches several replicas", async () => {
    const users = [ALICE, LOADERS[0], LOADERS[1], LOADERS[3]];
    const CALLS = 12;
    const sessions = await Promise.all(
      users.map(async (user, i) => {
        await c.set.turn(c.thread(20 + i), user);
        return { user, client: await session(20 + i) };
      }),
    );
    const outcomes = await Promise.all(
      sessions.map(async ({ user, client }, i) => {
        const statuses: string[] = [];
        for (let n = 0; n < CALLS; n++)
          statuses.push(
            (
              await mcpCall(
                client,
                { service: "stubborn", tool: "echo", args: { text: `load-${i}-${n}` }, on_behalf_of: user },
                { timeout: 60_000 },
              )
            ).structured.status,
          );
        return statuses;
      }),
    );
    expect(outcomes.flat().filter((s) => s !== "ok")).toEqual([]);
    for (const { client } of sessions) expect(backendsOf(sessionIdOf(client)).size).toBeGreaterThanOrEqual(2);
    const threads = users.map((_, i) => c.thread(20 + i).threadTs);
    const rows = await query<{ n: string }>(
      c.set,
      "SELECT count(*) AS n FROM audit WHERE event = 'call' AND tool = 'echo' AND thread_ts = ANY($1)",
      [threads],
    );
    expect(Number(rows[0]!.n)).toBe(users.length * CALLS);
  });
});
