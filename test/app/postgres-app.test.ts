// startApp on PostgreSQL (SLAUDE_DATABASE_URL): the real app over HTTP serves a brokered call whose
// connection, audit rows and health all live in a real PostgreSQL; no SQLite file is created.
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { parseRegistry } from "../../src/config/registry.js";
import { memoryLogger } from "../../src/log/logger.js";
import { StaticMembership } from "../../src/membership/membership.js";
import { openPostgresStore } from "../../src/store/postgres/pg-store.js";
import { ALICE, aliceThreadConnection, fixtureRegistryDoc, mcpCall, THREAD } from "../integration/broker-harness.js";
import { testAppConfig } from "../support/app-config.js";
import { type PgCluster, startPostgres } from "../support/postgres.js";

const TOKEN = `host-${randomBytes(8).toString("hex")}`;
let cluster: PgCluster;
let dir: string;
let app: RunningApp | undefined;
let client: Client | undefined;

beforeAll(async () => {
  cluster = await startPostgres();
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-pgapp-"));
});
afterAll(async () => {
  await client?.close().catch(() => {});
  await app?.close();
  await cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("startApp with SLAUDE_DATABASE_URL", () => {
  it("serves one brokered mcp_call on PostgreSQL: the call and its audit rows are in the database, /healthz ok, no SQLite file", async () => {
    const url = await cluster.createDatabase();
    const config = testAppConfig(dir, TOKEN, { SLAUDE_DATABASE_URL: url });
    const log = memoryLogger("debug");
    app = await startApp({
      config,
      log,
      membership: new StaticMembership().add(THREAD.teamId, THREAD.channelId, ALICE),
      registry: parseRegistry(fixtureRegistryDoc(), "x"),
    });
    const canary = `canary-${randomBytes(12).toString("hex")}`;
    const conn = await aliceThreadConnection(app.lifecycle, { token: canary });
    const turn = await fetch(`${app.url}/v1/turns`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({
        team_id: THREAD.teamId,
        channel_id: THREAD.channelId,
        thread_ts: THREAD.threadTs,
        user_id: ALICE,
      }),
    });
    expect(turn.status).toBe(204);
    client = new Client({ name: "pg-host", version: "1" });
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
    const r = await mcpCall(client, { tool: "read_item", args: { id: "a1" }, on_behalf_of: ALICE });
    expect(r.isError, r.text).toBe(false);
    expect(r.structured.status).toBe("ok");
    expect(r.text).not.toContain(canary);
    expect((await fetch(`${app.url}/healthz`)).status).toBe(200);

    // Read back through a second store on the same database: what another replica would see.
    const { store } = await openPostgresStore({ url });
    try {
      const rows = await store.audit.query({ connectionId: conn.id });
      expect(rows.map((a) => a.event)).toEqual(["connection_created", "call_started", "call"]);
      expect(rows[2]).toMatchObject({ tool: "read_item", callerUserId: ALICE, decision: "own" });
      expect(JSON.stringify(await store.audit.query({}))).not.toContain(canary);
    } finally {
      await store.close();
    }
    expect(existsSync(config.dbPath)).toBe(false);
  });
});
