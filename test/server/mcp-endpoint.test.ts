import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { loadConfig } from "../../src/config/env.js";
import { parseRegistry } from "../../src/config/registry.js";
import { memoryLogger } from "../../src/log/logger.js";
import { StaticMembership } from "../../src/membership/membership.js";
import { groupMembers } from "../../src/pool/child-ledger.js";
import type { Connection } from "../../src/store/records.js";
import {
  ALICE,
  aliceThreadConnection,
  BOB,
  CAROL,
  fixtureRegistryDoc,
  mcpCall,
  THREAD,
} from "../integration/broker-harness.js";
import { type RawResponse, rawRequest } from "../support/raw-http.js";

// The MCP endpoint and the host endpoint over real HTTP: the real app (SQLite, vault, pool, vendor
// children), real SDK clients over Streamable HTTP, raw node:http where a header must be forged.

const TOKEN_A = `host-a-${randomBytes(8).toString("hex")}`;
const TOKEN_B = `host-b-${randomBytes(8).toString("hex")}`;
const THREAD_HEADER = `${THREAD.teamId}/${THREAD.channelId}/${THREAD.threadTs}`;
const OTHER_THREAD_HEADER = `${THREAD.teamId}/${THREAD.channelId}/1700000000.000999`;
const INIT = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
};

let dir: string;
let app: RunningApp;
let log: ReturnType<typeof memoryLogger>;
const clients: Client[] = [];

beforeEach(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-endpoint-"));
  log = memoryLogger("debug");
  const config = loadConfig({
    NODE_ENV: "test",
    SLAUDE_DATA_DIR: dir,
    PORT: "0",
    SLAUDE_HOST_TOKENS: `${TOKEN_A},${TOKEN_B}`,
    SLAUDE_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
    SLAUDE_ALLOWED_HOSTS: "broker.internal",
    SLAUDE_ALLOWED_ORIGINS: "https://agent.example",
    PATH: process.env.PATH ?? "/usr/bin:/bin",
  });
  app = await startApp({
    config,
    log,
    membership: new StaticMembership().add(THREAD.teamId, THREAD.channelId, ALICE, BOB),
    registry: parseRegistry(fixtureRegistryDoc(), "x"),
  });
});

afterEach(async () => {
  for (const c of clients.splice(0)) await c.close().catch(() => {});
  await app.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A raw HTTP request, so Host, Origin and the other headers are exactly what the test says. */
function raw(opts: {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: unknown;
}): Promise<RawResponse> {
  return rawRequest(app.port, opts);
}

const MCP_ACCEPT = { accept: "application/json, text/event-stream" };
const bearer = (t: string) => ({ authorization: `Bearer ${t}` });

async function openSession(
  token = TOKEN_A,
  thread = THREAD_HEADER,
): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${token}`, "X-Slaude-Thread": thread } },
  });
  const client = new Client({ name: "test-host", version: "1" });
  await client.connect(transport);
  clients.push(client);
  return { client, transport };
}

async function reportTurn(user: string, token = TOKEN_A): Promise<void> {
  const r = await raw({
    path: "/v1/turns",
    headers: bearer(token),
    body: { team_id: THREAD.teamId, channel_id: THREAD.channelId, thread_ts: THREAD.threadTs, user_id: user },
  });
  expect(r.status).toBe(204);
}

async function connectAlice(): Promise<Connection> {
  return aliceThreadConnection(app.lifecycle);
}

function vendorRanAs(text: string): string {
  return (JSON.parse(text.split("\n")[0]!) as { ranAs: string }).ranAs;
}

/** Waits until no process of the group `pgid` is left (a killed child may take a moment to be reaped). */
async function groupGone(pgid: number): Promise<void> {
  await vi.waitFor(() => expect(groupMembers(pgid)).toEqual([]), { timeout: 5_000, interval: 50 });
}

describe("host authentication", () => {
  it("refuses a missing or wrong bearer token with 401 on both endpoints", async () => {
    for (const p of ["/mcp", "/v1/turns"]) {
      const none = await raw({ path: p, headers: MCP_ACCEPT, body: INIT });
      expect(none.status, p).toBe(401);
      expect(none.headers["www-authenticate"]).toContain("Bearer");
      expect(JSON.parse(none.body)).toEqual({ error: "unauthorized" });
      for (const h of [
        bearer("wrong"),
        bearer(`${TOKEN_A}x`),
        { authorization: TOKEN_A },
        { authorization: `Basic ${TOKEN_A}` },
        bearer(""),
      ]) {
        expect(
          (await raw({ path: p, headers: { ...MCP_ACCEPT, ...h, "x-slaude-thread": THREAD_HEADER }, body: INIT }))
            .status,
          `${p} ${h.authorization}`,
        ).toBe(401);
      }
    }
    // The SDK client sees the refusal too.
    await expect(openSession("wrong")).rejects.toThrow();
  });

  it("accepts either configured host token", async () => {
    for (const token of [TOKEN_A, TOKEN_B]) {
      const { client } = await openSession(token);
      expect((await client.listTools()).tools).toHaveLength(5);
      await reportTurn(ALICE, token);
    }
  });
});

describe("Host and Origin validation", () => {
  it("refuses a Host header that does not name this server with 403, even with a valid token", async () => {
    for (const p of ["/mcp", "/v1/turns"]) {
      for (const host of [
        "evil.example",
        `evil.example:${app.port}`,
        "127.0.0.1.evil.example",
        `localhost:${app.port + 1}`,
      ]) {
        const r = await raw({
          path: p,
          headers: { ...MCP_ACCEPT, ...bearer(TOKEN_A), host, "x-slaude-thread": THREAD_HEADER },
          body: INIT,
        });
        expect(r.status, `${p} ${host}`).toBe(403);
        expect(JSON.parse(r.body)).toEqual({ error: "bad_host" });
      }
    }
  });

  it("accepts the hosts it serves: loopback on the bound port and SLAUDE_ALLOWED_HOSTS", async () => {
    for (const host of [`127.0.0.1:${app.port}`, `localhost:${app.port}`, "broker.internal", "BROKER.INTERNAL"]) {
      const r = await raw({
        path: "/v1/turns",
        headers: { ...bearer(TOKEN_A), host },
        body: { team_id: "T1", channel_id: "C1", thread_ts: "1700000000.000100", user_id: ALICE },
      });
      expect(r.status, host).toBe(204);
    }
  });

  it("refuses a foreign Origin with 403 and accepts SLAUDE_ALLOWED_ORIGINS", async () => {
    for (const p of ["/mcp", "/v1/turns"]) {
      for (const origin of [
        "https://evil.example",
        "null",
        "https://agent.example.evil.example",
        "http://agent.example",
      ]) {
        const r = await raw({
          path: p,
          headers: { ...MCP_ACCEPT, ...bearer(TOKEN_A), origin, "x-slaude-thread": THREAD_HEADER },
          body: INIT,
        });
        expect(r.status, `${p} ${origin}`).toBe(403);
        expect(JSON.parse(r.body)).toEqual({ error: "bad_origin" });
      }
    }
    const ok = await raw({
      path: "/v1/turns",
      headers: { ...bearer(TOKEN_A), origin: "https://agent.example" },
      body: { team_id: "T1", channel_id: "C1", thread_ts: "1700000000.000100", user_id: ALICE },
    });
    expect(ok.status).toBe(204);
  });
});

describe("session binding", () => {
  it("refuses to open a session without a valid X-Slaude-Thread (400)", async () => {
    for (const thread of [
      undefined,
      "",
      "T1/C1",
      "T1/C1/not-a-ts",
      "T1/C1/1700000000.000100/x",
      "T 1/C1/1700000000.000100",
    ]) {
      const r = await raw({
        path: "/mcp",
        headers: { ...MCP_ACCEPT, ...bearer(TOKEN_A), ...(thread !== undefined ? { "x-slaude-thread": thread } : {}) },
        body: INIT,
      });
      expect(r.status, String(thread)).toBe(400);
      expect(r.body).toContain("X-Slaude-Thread");
      expect(r.headers["mcp-session-id"]).toBeUndefined();
    }
  });

  it("refuses requests of an unknown session and non-initialize requests without one", async () => {
    const unknown = await raw({
      path: "/mcp",
      headers: { ...MCP_ACCEPT, ...bearer(TOKEN_A), "mcp-session-id": "no-such-session" },
      body: { jsonrpc: "2.0", id: 2, method: "tools/list" },
    });
    expect(unknown.status).toBe(404);
    const noSession = await raw({
      path: "/mcp",
      headers: { ...MCP_ACCEPT, ...bearer(TOKEN_A), "x-slaude-thread": THREAD_HEADER },
      body: { jsonrpc: "2.0", id: 2, method: "tools/list" },
    });
    expect(noSession.status).toBe(400);
  });

  it("a session never switches threads: another X-Slaude-Thread is refused with 403 and nothing runs", async () => {
    await connectAlice();
    const { client, transport } = await openSession();
    await reportTurn(ALICE);
    const first = await mcpCall(client, { tool: "write_item", args: { id: "1", value: "a" }, on_behalf_of: ALICE });
    expect(first.structured.ranAs).toBe("own");
    const sessionId = transport.sessionId;
    expect(sessionId).toBeTruthy();
    const callsBefore = await app.store.audit.count();

    const call = {
      jsonrpc: "2.0",
      id: 99,
      method: "tools/call",
      params: {
        name: "mcp_call",
        arguments: { service: "vendor", tool: "write_item", args: { id: "2", value: "b" }, on_behalf_of: ALICE },
      },
    };
    for (const thread of [OTHER_THREAD_HEADER, "T2/C1/1700000000.000100", "garbage"]) {
      const r = await raw({
        path: "/mcp",
        headers: {
          ...MCP_ACCEPT,
          ...bearer(TOKEN_A),
          "mcp-session-id": sessionId!,
          "mcp-protocol-version": "2025-06-18",
          "x-slaude-thread": thread,
        },
        body: call,
      });
      expect(r.status, thread).toBe(403);
      expect(r.body).toContain("another thread");
    }
    expect(await app.store.audit.count()).toBe(callsBefore);
    // The session itself still works, in its own thread.
    const again = await mcpCall(client, { tool: "read_item", args: { id: "3" }, on_behalf_of: ALICE });
    expect(again.structured.ranAs).toBe("own");
  });
});

describe("session end", () => {
  it("DELETE ends a session: its id is unknown afterwards", async () => {
    const { client, transport } = await openSession();
    const id = transport.sessionId!;
    expect((await client.listTools()).tools).toHaveLength(5);
    await transport.terminateSession();
    const r = await raw({
      path: "/mcp",
      headers: { ...MCP_ACCEPT, ...bearer(TOKEN_A), "mcp-session-id": id, "mcp-protocol-version": "2025-06-18" },
      body: { jsonrpc: "2.0", id: 5, method: "tools/list" },
    });
    expect(r.status).toBe(404);
  });
});

describe("membership", () => {
  it("fails closed without a membership source: the caller's own connection does not run", async () => {
    const dir2 = mkdtempSync(path.join(os.tmpdir(), "slaude-endpoint-"));
    const noSlack = await startApp({
      config: loadConfig({
        NODE_ENV: "test",
        SLAUDE_DATA_DIR: dir2,
        PORT: "0",
        SLAUDE_HOST_TOKENS: TOKEN_A,
        SLAUDE_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
      }),
      log: memoryLogger(),
      registry: parseRegistry(fixtureRegistryDoc(), "x"),
    });
    try {
      await aliceThreadConnection(noSlack.lifecycle, { token: "canary-x" });
      const transport = new StreamableHTTPClientTransport(new URL(`${noSlack.url}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${TOKEN_A}`, "X-Slaude-Thread": THREAD_HEADER } },
      });
      const client = new Client({ name: "test-host", version: "1" });
      await client.connect(transport);
      clients.push(client);
      const turn = await fetch(`${noSlack.url}/v1/turns`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN_A}`, "content-type": "application/json" },
        body: JSON.stringify({
          team_id: THREAD.teamId,
          channel_id: THREAD.channelId,
          thread_ts: THREAD.threadTs,
          user_id: ALICE,
        }),
      });
      expect(turn.status).toBe(204);
      const r = await mcpCall(client, { tool: "read_item", args: { id: "1" }, on_behalf_of: ALICE });
      expect(r.structured.code).toBe("not_member");
      expect(noSlack.broker.pool.stats().spawned).toBe(0);
      await client.close();
    } finally {
      await noSlack.close();
      rmSync(dir2, { recursive: true, force: true });
    }
  });
});

describe("tools/list", () => {
  it("lists exactly the five tools, with strict input schemas and annotations", async () => {
    const { client } = await openSession();
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      "connect",
      "connections_list",
      "connections_revoke",
      "mcp_call",
      "mcp_describe",
    ]);
    for (const t of tools) {
      expect(t.inputSchema.type, t.name).toBe("object");
      expect((t.inputSchema as { additionalProperties?: unknown }).additionalProperties, t.name).toBe(false);
      expect(t.annotations, t.name).toBeDefined();
      expect(typeof t.annotations?.readOnlyHint, t.name).toBe("boolean");
      expect(t.description, t.name).toBeTruthy();
    }
    const byName = new Map(tools.map((t) => [t.name, t]));
    expect([...(byName.get("mcp_call")!.inputSchema.required ?? [])].sort()).toEqual([
      "on_behalf_of",
      "service",
      "tool",
    ]);
    expect(byName.get("mcp_call")!.annotations?.readOnlyHint).toBe(false);
    expect(byName.get("mcp_describe")!.annotations?.readOnlyHint).toBe(true);
    expect(byName.get("connections_list")!.annotations?.readOnlyHint).toBe(true);
    expect(byName.get("connections_revoke")!.annotations?.destructiveHint).toBe(true);
    expect(Object.keys(byName.get("connections_list")!.inputSchema.properties ?? {})).toEqual([]);
  });

  it("rejects arguments the schemas do not name, before anything runs", async () => {
    await connectAlice();
    const { client } = await openSession();
    await reportTurn(ALICE);
    const before = await app.store.audit.count();
    const extra = await client.callTool({
      name: "mcp_call",
      arguments: { service: "vendor", tool: "read_item", args: { id: "1" }, on_behalf_of: ALICE, as_user: BOB },
    });
    expect(extra.isError).toBe(true);
    expect(JSON.stringify(extra.content)).toContain("as_user");
    const listExtra = await client.callTool({ name: "connections_list", arguments: { owner: BOB } });
    expect(listExtra.isError).toBe(true);
    expect(await app.store.audit.count()).toBe(before);
    expect(app.broker.pool.stats().spawned).toBe(0);
  });
});

describe("POST /v1/turns", () => {
  const good = { team_id: THREAD.teamId, channel_id: THREAD.channelId, thread_ts: THREAD.threadTs, user_id: ALICE };

  it("answers 204 and validates its body strictly, naming the bad field", async () => {
    const ok = await raw({ path: "/v1/turns", headers: bearer(TOKEN_A), body: good });
    expect(ok.status).toBe(204);
    expect(ok.body).toBe("");

    const cases: [unknown, string][] = [
      [{ ...good, user_id: "alice" }, "user_id"],
      [{ ...good, thread_ts: "yesterday" }, "thread_ts"],
      [{ ...good, channel_id: "C1/../C2" }, "channel_id"],
      [{ team_id: THREAD.teamId, channel_id: THREAD.channelId, thread_ts: THREAD.threadTs }, "user_id"],
      [{ ...good, team_id: 7 }, "team_id"],
      [{ ...good, as_admin: true }, "as_admin"],
    ];
    for (const [body, field] of cases) {
      const r = await raw({ path: "/v1/turns", headers: bearer(TOKEN_A), body });
      expect(r.status, field).toBe(400);
      const doc = JSON.parse(r.body) as { error: string; issues: string[] };
      expect(doc.error).toBe("invalid_turn");
      expect(doc.issues.join("\n"), field).toContain(field);
    }
    for (const body of ["{not json", "", "[1"]) {
      const r = await raw({ path: "/v1/turns", headers: bearer(TOKEN_A), body });
      expect(r.status).toBe(400);
      expect(JSON.parse(r.body)).toEqual({ error: "invalid_json" });
    }
    for (const body of ["[]", "null", '"x"']) {
      const r = await raw({ path: "/v1/turns", headers: bearer(TOKEN_A), body });
      expect(r.status, body).toBe(400);
    }
    // Only POST is routed.
    expect((await raw({ method: "GET", path: "/v1/turns", headers: bearer(TOKEN_A) })).status).toBe(404);
    // A refused report changed nothing.
    expect(await app.broker.turns.current(THREAD)).toBe(ALICE);
  });

  it("sets the caller read live at each call: the same session runs as whoever has the turn now", async () => {
    const { client } = await openSession();
    // No turn reported yet: nobody to act for.
    const before = await mcpCall(client, { tool: "read_item", args: { id: "0" }, on_behalf_of: ALICE });
    expect(before.structured.code).toBe("no_turn");

    await reportTurn(ALICE);
    await connectAlice();
    const a = await mcpCall(client, { tool: "read_item", args: { id: "1" }, on_behalf_of: ALICE });
    expect(a.isError).toBe(false);
    expect(a.structured.ranAs).toBe("own");
    expect(a.structured.connectionOwner).toBe(ALICE);
    expect(vendorRanAs(a.text)).toBe(ALICE);

    // Bob's turn now, same session: never on Alice's connection without her consent, and with no
    // approval channel configured she cannot be asked.
    await reportTurn(BOB);
    const b = await mcpCall(client, { tool: "read_item", args: { id: "2" }, on_behalf_of: BOB });
    expect(b.isError).toBe(true);
    expect(b.structured.code).toBe("approval_unavailable");
    expect(b.text).toContain(ALICE);
    // The model cannot claim Alice's turn back.
    const forged = await mcpCall(client, { tool: "read_item", args: { id: "3" }, on_behalf_of: ALICE });
    expect(forged.structured.code).toBe("on_behalf_of_mismatch");
    expect(forged.text).toContain(BOB);
    // Carol is not a member of the channel.
    await reportTurn(CAROL);
    expect((await mcpCall(client, { tool: "read_item", args: { id: "4" }, on_behalf_of: CAROL })).structured.code).toBe(
      "not_member",
    );

    const ran = await app.store.audit.query({ event: "call" });
    expect(ran.map((e) => e.callerUserId)).toEqual([ALICE]);
  });
});

describe("the other tools over HTTP", () => {
  it("connect answers not_available, naming the setting that turns it on, without any link", async () => {
    const { client } = await openSession();
    await reportTurn(BOB);
    const r = await client.callTool({ name: "connect", arguments: { service: "vendor" } });
    const s = r.structuredContent as Record<string, unknown>;
    expect(s.status).toBe("not_available");
    expect(s.service).toBe("vendor");
    // What is true: it needs a workspace (Slack) to deliver the card, not a feature still to come.
    expect(s.message).toMatch(/SLAUDE_WORKSPACE=none/);
    expect(s.message).toMatch(/SLACK_\*/);
    expect(s.message).not.toMatch(/not available yet|has not been enabled/);
    const everything = JSON.stringify(r);
    expect(everything).not.toMatch(/https?:\/\//);
    expect(everything).not.toContain("/login");
    const unknown = await client.callTool({ name: "connect", arguments: { service: "nope" } });
    expect((unknown.structuredContent as Record<string, unknown>).code).toBe("unknown_service");
  });

  it("mcp_describe answers from the registry before any vendor ran, spawning nothing", async () => {
    const { client } = await openSession();
    await reportTurn(BOB);
    const r = await client.callTool({ name: "mcp_describe", arguments: { service: "vendor", query: "item" } });
    const s = r.structuredContent as {
      status: string;
      source: string;
      tools: { name: string; class: { access: string; write: boolean } }[];
    };
    expect(s.status).toBe("ok");
    expect(s.source).toBe("registry");
    expect(s.tools.map((t) => t.name).sort()).toEqual(["read_item", "write_item"]);
    expect(s.tools.find((t) => t.name === "write_item")?.class).toMatchObject({ access: "borrowable", write: true });
    const missing = await client.callTool({ name: "mcp_describe", arguments: { service: "vendor", tool: "nope" } });
    expect((missing.structuredContent as Record<string, unknown>).code).toBe("invalid_request");
    expect(app.broker.pool.stats().spawned).toBe(0);
  });

  it("connections_list and connections_revoke work; revoking kills the child", async () => {
    const conn = await connectAlice();
    const { client } = await openSession();
    await reportTurn(ALICE);
    expect(
      (await mcpCall(client, { tool: "read_item", args: { id: "1" }, on_behalf_of: ALICE })).structured.ranAs,
    ).toBe("own");
    expect(app.broker.pool.has(conn.id)).toBe(true);
    const pgid = app.broker.pool.pidOf(conn.id);
    expect(pgid).toBeGreaterThan(0);

    const mine = await client.callTool({ name: "connections_list", arguments: {} });
    const rows = (
      mine.structuredContent as {
        connections: { id: string; mine: boolean; owner: string | null; where: string; service: string }[];
      }
    ).connections;
    expect(rows).toEqual([
      expect.objectContaining({ id: conn.id, mine: true, owner: ALICE, where: "this_thread", service: "vendor" }),
    ]);
    expect(JSON.stringify(mine)).not.toContain("canary-");

    // Bob sees Alice's connection as borrowable with her approval; he cannot revoke it.
    await reportTurn(BOB);
    const his = await client.callTool({ name: "connections_list", arguments: {} });
    expect((his.structuredContent as { connections: unknown[] }).connections).toEqual([
      expect.objectContaining({ id: conn.id, mine: false, owner: ALICE, grant: "needs_approval" }),
    ]);
    const notHis = await client.callTool({ name: "connections_revoke", arguments: { connection_id: conn.id } });
    expect((notHis.structuredContent as Record<string, unknown>).code).toBe("not_found");
    expect(app.broker.pool.has(conn.id)).toBe(true);

    await reportTurn(ALICE);
    const empty = await client.callTool({ name: "connections_revoke", arguments: {} });
    expect((empty.structuredContent as Record<string, unknown>).code).toBe("invalid_request");
    const revoked = await client.callTool({ name: "connections_revoke", arguments: { service: "vendor" } });
    expect(revoked.isError).toBeFalsy();
    expect((revoked.structuredContent as { revoked: unknown[] }).revoked).toEqual([{ id: conn.id, service: "vendor" }]);
    expect(app.broker.pool.has(conn.id)).toBe(false);
    await groupGone(pgid!);
    expect((await app.store.connections.get(conn.id))?.status).toBe("revoked");

    const after = await mcpCall(client, { tool: "read_item", args: { id: "2" }, on_behalf_of: ALICE });
    expect(after.structured.status).toBe("needs_connect");
    const list = await client.callTool({ name: "connections_list", arguments: {} });
    expect((list.structuredContent as { connections: unknown[] }).connections).toEqual([]);
  });

  it("after close() no vendor process remains", async () => {
    const conn = await connectAlice();
    const { client } = await openSession();
    await reportTurn(ALICE);
    expect(
      (await mcpCall(client, { tool: "read_item", args: { id: "1" }, on_behalf_of: ALICE })).structured.ranAs,
    ).toBe("own");
    const pgid = app.broker.pool.pidOf(conn.id);
    expect(pgid).toBeGreaterThan(0);
    expect(groupMembers(pgid!).length).toBeGreaterThan(0);
    await app.close();
    await groupGone(pgid!);
    expect(() => process.kill(pgid!, 0)).toThrow();
  });
});
