// Two real apps (two replicas) on one PostgreSQL: a turn reported to replica A is the caller of the
// very next mcp_call through replica B, its user is a participant on B (borrowing), an end sent to
// B ends the turn for A, and an embedded host's caller on B is A's caller too. Each replica has its
// own data dir, as in production.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { parseRegistry } from "../../src/config/registry.js";
import { memoryLogger } from "../../src/log/logger.js";
import { StaticMembership } from "../../src/membership/membership.js";
import { ALICE, BOB, fixtureRegistryDoc, mcpCall, THREAD } from "../integration/broker-harness.js";
import { testAppConfig } from "../support/app-config.js";
import { type PgCluster, startPostgres } from "../support/postgres.js";

const TOKEN = `host-${randomBytes(8).toString("hex")}`;
const KEY = randomBytes(32).toString("base64");
let cluster: PgCluster;
const dirs: string[] = [];
const apps: RunningApp[] = [];
const clients: Client[] = [];

beforeAll(async () => {
  cluster = await startPostgres();
});
afterAll(async () => {
  for (const c of clients) await c.close().catch(() => {});
  for (const a of apps) await a.close();
  await cluster?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** One replica: its own data dir, the shared database, key and host token. */
async function replica(url: string): Promise<RunningApp> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-pgturns-"));
  dirs.push(dir);
  const config = testAppConfig(dir, TOKEN, { SLAUDE_DATABASE_URL: url, SLAUDE_ENCRYPTION_KEY: KEY });
  const app = await startApp({
    config,
    log: memoryLogger("debug"),
    membership: new StaticMembership().add(THREAD.teamId, THREAD.channelId, ALICE, BOB),
    registry: parseRegistry(fixtureRegistryDoc(), "x"),
  });
  apps.push(app);
  return app;
}

async function session(app: RunningApp): Promise<Client> {
  const client = new Client({ name: "pg-turns-host", version: "1" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), {
      requestInit: {
        headers: {
          Authorization: `Bearer ${TOKEN}`,
          "X-Slaude-Thread": `${THREAD.teamId}/${THREAD.channelId}/${THREAD.threadTs}`,
        },
      },
    }),
  );
  clients.push(client);
  return client;
}

const post = (app: RunningApp, p: string, body: unknown) =>
  fetch(`${app.url}${p}`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
const turnBody = (user: string, explicit = false) => ({
  team_id: THREAD.teamId,
  channel_id: THREAD.channelId,
  thread_ts: THREAD.threadTs,
  user_id: user,
  ...(explicit ? { explicit_end: true } : {}),
});

describe("turns across two replicas on one PostgreSQL", () => {
  it("POST /v1/turns to A is in force at B's next mcp_call (and B sees the participant); /v1/turns/end on B ends it for A", async () => {
    const url = await cluster.createDatabase();
    const a = await replica(url);
    const b = await replica(url);
    // Alice's connection is hers in this thread; Bob's follows him (user scope): borrowable where he took part.
    for (const [owner, scope] of [
      [ALICE, "thread"],
      [BOB, "user"],
    ] as const) {
      await a.lifecycle.create({
        teamId: THREAD.teamId,
        ownerUserId: owner,
        service: "vendor",
        scope,
        ...(scope === "thread" ? { channelId: THREAD.channelId, threadTs: THREAD.threadTs } : {}),
        credential: { kind: "fields", fields: { token: `canary-${randomBytes(8).toString("hex")}`, user: owner } },
        createdBy: owner,
      });
    }
    const onB = await session(b);
    const onA = await session(a);
    // No turn anywhere yet: B has no caller.
    expect((await mcpCall(onB, { tool: "read_item", args: { id: "a1" }, on_behalf_of: ALICE })).structured.code).toBe(
      "no_turn",
    );

    // Bob's turn, reported to A: B's very next call runs as Bob.
    expect((await post(a, "/v1/turns", turnBody(BOB))).status).toBe(204);
    const asBob = await mcpCall(onB, { tool: "read_item", args: { id: "b1" }, on_behalf_of: BOB });
    expect(asBob.isError, asBob.text).toBe(false);
    expect(asBob.structured).toMatchObject({ status: "ok", ranAs: "own", connectionOwner: BOB });

    // Alice's explicit turn, reported to A: B runs as Alice and lists Bob's connection as borrowable (Bob took part).
    const started = await post(a, "/v1/turns", turnBody(ALICE, true));
    expect(started.status).toBe(204);
    const turnId = started.headers.get("x-slaude-turn")!;
    const asAlice = await mcpCall(onB, { tool: "read_item", args: { id: "a2" }, on_behalf_of: ALICE });
    expect(asAlice.structured).toMatchObject({ status: "ok", ranAs: "own", connectionOwner: ALICE });
    const listed = await onB.callTool({ name: "connections_list", arguments: {} });
    const rows = (
      listed.structuredContent as { connections: { owner: string | null; mine: boolean; grant?: string }[] }
    ).connections;
    expect(rows.filter((r) => r.mine).map((r) => r.owner)).toEqual([ALICE]);
    expect(rows.filter((r) => !r.mine)).toEqual([expect.objectContaining({ owner: BOB, grant: "needs_approval" })]);

    // The end goes to B: A's next call has no turn to act for, and A refuses a second end.
    expect((await post(b, "/v1/turns/end", { turn_id: turnId })).status).toBe(204);
    expect((await mcpCall(onA, { tool: "read_item", args: { id: "a3" }, on_behalf_of: ALICE })).structured.code).toBe(
      "no_turn",
    );
    expect((await post(a, "/v1/turns/end", { turn_id: turnId })).status).toBe(404);

    // An embedded host on B records its caller's turn at each call: A's next HTTP call runs as that user.
    const embedded = await b.broker.connectEmbedded(() => ({ ...THREAD, userId: BOB }));
    try {
      expect(
        (await mcpCall(embedded.client, { tool: "read_item", args: { id: "b2" }, on_behalf_of: BOB })).structured,
      ).toMatchObject({ status: "ok", connectionOwner: BOB });
    } finally {
      await embedded.close();
    }
    expect((await mcpCall(onA, { tool: "read_item", args: { id: "b3" }, on_behalf_of: BOB })).structured).toMatchObject(
      { status: "ok", connectionOwner: BOB },
    );

    // The audit (shared) shows each call under the user whose turn it was, whichever replica ran it.
    const calls = (await a.store.audit.query({})).filter((r) => r.event === "call");
    expect(calls.map((r) => [r.callerUserId, r.decision])).toEqual([
      [BOB, "own"],
      [ALICE, "own"],
      [BOB, "own"],
      [BOB, "own"],
    ]);
  }, 180_000);
});
