import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { parseRegistry } from "../../src/config/registry.js";
import { memoryLogger } from "../../src/log/logger.js";
import { StaticMembership } from "../../src/membership/membership.js";
import { ALICE, BOB, fixtureRegistryDoc, mcpCall, THREAD } from "../integration/broker-harness.js";
import { testAppConfig } from "../support/app-config.js";

// Concurrent turns in one thread, end to end: the real app, a real SDK client over Streamable HTTP
// whose host sets X-Slaude-Turn per request, real vendor children, a real SQLite file.

const TOKEN = `host-${randomBytes(12).toString("hex")}`;
const THREAD_HEADER = `${THREAD.teamId}/${THREAD.channelId}/${THREAD.threadTs}`;
const OTHER = { ...THREAD, threadTs: "1700000000.000999" };

let dir: string;
let app: RunningApp;
const clients: Client[] = [];

beforeEach(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-turns-"));
  const config = testAppConfig(dir, TOKEN);
  app = await startApp({
    config,
    log: memoryLogger(),
    membership: new StaticMembership().add(THREAD.teamId, THREAD.channelId, ALICE, BOB),
    registry: parseRegistry(fixtureRegistryDoc(), "x"),
  });
  for (const owner of [ALICE, BOB]) {
    await app.lifecycle.create({
      teamId: THREAD.teamId,
      ownerUserId: owner,
      service: "vendor",
      scope: "thread",
      channelId: THREAD.channelId,
      threadTs: THREAD.threadTs,
      credential: { kind: "fields", fields: { token: `canary-${randomBytes(8).toString("hex")}`, user: owner } },
      createdBy: owner,
    });
  }
});

afterEach(async () => {
  for (const c of clients.splice(0)) await c.close().catch(() => {});
  await app.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A host session whose X-Slaude-Turn header is whatever `turn.id` holds at each request. */
async function hostSession(): Promise<{ client: Client; turn: { id: string | undefined } }> {
  const turn: { id: string | undefined } = { id: undefined };
  const transport = new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${TOKEN}`, "X-Slaude-Thread": THREAD_HEADER } },
    fetch: (url, init) => {
      const headers = new Headers(init?.headers);
      if (turn.id !== undefined) headers.set("x-slaude-turn", turn.id);
      return fetch(url, { ...init, headers });
    },
  });
  const client = new Client({ name: "turn-host", version: "1" });
  await client.connect(transport);
  clients.push(client);
  return { client, turn };
}

function post(p: string, body: unknown): Promise<Response> {
  return fetch(`${app.url}${p}`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

async function startTurn(user: string, opts: { explicit?: boolean; thread?: typeof THREAD } = {}): Promise<string> {
  const t = opts.thread ?? THREAD;
  const r = await post("/v1/turns", {
    team_id: t.teamId,
    channel_id: t.channelId,
    thread_ts: t.threadTs,
    user_id: user,
    ...(opts.explicit ? { explicit_end: true } : {}),
  });
  expect(r.status).toBe(204);
  const id = r.headers.get("x-slaude-turn");
  expect(id).toMatch(/^turn_[A-Za-z0-9_-]{24}$/);
  return id!;
}

/** Whose credential the fixture vendor ran with (it echoes its `user` field first). */
function ranFor(text: string): string {
  return (JSON.parse(text.split("\n")[0]!) as { ranAs: string }).ranAs;
}

describe("turn ids", () => {
  it("POST /v1/turns answers 204 with a fresh turn id; /v1/turns/end ends it once and validates strictly", async () => {
    const a = await startTurn(ALICE, { explicit: true });
    const b = await startTurn(ALICE, { explicit: true });
    expect(a).not.toBe(b);
    const end = await post("/v1/turns/end", { turn_id: a });
    expect(end.status).toBe(204);
    const again = await post("/v1/turns/end", { turn_id: a });
    expect(again.status).toBe(404);
    expect(await again.json()).toEqual({ error: "unknown_turn" });
    for (const body of [{}, { turn_id: "turn_short" }, { turn_id: b, user_id: BOB }, { turn_id: 7 }]) {
      const r = await post("/v1/turns/end", body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(((await r.json()) as { error: string }).error).toBe("invalid_turn");
    }
    const noAuth = await fetch(`${app.url}/v1/turns/end`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ turn_id: b }),
    });
    expect(noAuth.status).toBe(401);
    const bad = await post("/v1/turns", {
      team_id: THREAD.teamId,
      channel_id: THREAD.channelId,
      thread_ts: THREAD.threadTs,
      user_id: ALICE,
      explicit_end: "yes",
    });
    expect(bad.status).toBe(400);
  });
});

describe("overlapping turns in one thread", () => {
  it("an unnamed call while two people's turns overlap is refused as turn_ambiguous; named calls run for their turn's user", async () => {
    const { client, turn } = await hostSession();
    const a = await startTurn(ALICE, { explicit: true });
    // Bob writes while Alice's turn is still running.
    const b = await startTurn(BOB, { explicit: true });
    const before = await app.store.audit.count();

    const unnamed = await mcpCall(client, { tool: "read_item", args: { id: "1" }, on_behalf_of: BOB });
    expect(unnamed.isError).toBe(true);
    expect(unnamed.structured.code).toBe("turn_ambiguous");
    expect(unnamed.text).toContain("X-Slaude-Turn");
    expect(await app.store.audit.count()).toBe(before);
    expect(app.broker.pool.stats().spawned).toBe(0);

    turn.id = a;
    const forA = await mcpCall(client, { tool: "read_item", args: { id: "2" }, on_behalf_of: ALICE });
    expect(forA.structured.ranAs).toBe("own");
    expect(ranFor(forA.text)).toBe(ALICE);
    // Naming Alice's turn, the model cannot act for Bob.
    expect((await mcpCall(client, { tool: "read_item", args: { id: "3" }, on_behalf_of: BOB })).structured.code).toBe(
      "on_behalf_of_mismatch",
    );

    turn.id = b;
    const forB = await mcpCall(client, { tool: "read_item", args: { id: "4" }, on_behalf_of: BOB });
    expect(ranFor(forB.text)).toBe(BOB);

    // Every tool goes through the same rule.
    turn.id = undefined;
    const list = await client.callTool({ name: "connections_list", arguments: {} });
    expect((list.structuredContent as { code: string }).code).toBe("turn_ambiguous");

    // Alice's turn ends: Bob's is the only one live, unnamed calls are his again.
    expect((await post("/v1/turns/end", { turn_id: a })).status).toBe(204);
    const after = await mcpCall(client, { tool: "read_item", args: { id: "5" }, on_behalf_of: BOB });
    expect(ranFor(after.text)).toBe(BOB);
    // Her ended turn can no longer be named.
    turn.id = a;
    expect((await mcpCall(client, { tool: "read_item", args: { id: "6" }, on_behalf_of: ALICE })).structured.code).toBe(
      "turn_unknown",
    );

    const ran = await app.store.audit.query({ event: "call" });
    expect(ran.map((e) => e.callerUserId)).toEqual([ALICE, BOB, BOB]);
  });

  it("a forged, another thread's or superseded turn id is refused as turn_unknown; a malformed one with 400", async () => {
    const { client, turn } = await hostSession();
    await startTurn(ALICE);
    const otherThreads = await startTurn(ALICE, { thread: OTHER, explicit: true });
    const before = await app.store.audit.count();
    for (const id of [`turn_${"x".repeat(24)}`, otherThreads]) {
      turn.id = id;
      const r = await mcpCall(client, { tool: "read_item", args: { id: "1" }, on_behalf_of: ALICE });
      expect(r.structured.code, id).toBe("turn_unknown");
    }
    // Hosts that never end turns: a newer turn supersedes the older one, whose id is then refused.
    const old = await startTurn(BOB);
    await startTurn(ALICE);
    turn.id = old;
    expect((await mcpCall(client, { tool: "read_item", args: { id: "2" }, on_behalf_of: BOB })).structured.code).toBe(
      "turn_unknown",
    );
    expect(await app.store.audit.count()).toBe(before);
    expect(app.broker.pool.stats().spawned).toBe(0);

    turn.id = "not-a-turn";
    await expect(client.callTool({ name: "connections_list", arguments: {} })).rejects.toThrow(/X-Slaude-Turn/);
  });

  it("hosts that never send ends keep today's behaviour: the newest turn is the caller", async () => {
    const { client } = await hostSession();
    await startTurn(ALICE);
    expect(ranFor((await mcpCall(client, { tool: "read_item", args: { id: "1" }, on_behalf_of: ALICE })).text)).toBe(
      ALICE,
    );
    await startTurn(BOB);
    expect(ranFor((await mcpCall(client, { tool: "read_item", args: { id: "2" }, on_behalf_of: BOB })).text)).toBe(BOB);
  });
});
