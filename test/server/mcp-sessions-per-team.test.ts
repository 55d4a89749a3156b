import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { ManualClock } from "../../src/clock/clock.js";
import { parseRegistry } from "../../src/config/registry.js";
import type { ThreadRef } from "../../src/domain/thread.js";
import { memoryLogger } from "../../src/log/logger.js";
import { StaticMembership } from "../../src/membership/membership.js";
import { ALICE, aliceThreadConnection, fixtureRegistryDoc, mcpCall, THREAD } from "../integration/broker-harness.js";
import { testAppConfig } from "../support/app-config.js";

// MCP sessions per team (issue 20 item 9) over real HTTP with real SDK clients: one team holding
// its share of sessions cannot take another team's, and makes room only among its own.

const TOKEN = `host-${randomBytes(8).toString("hex")}`;
const THREAD_B: ThreadRef = { teamId: "T2", channelId: "C2", threadTs: "1700000000.000200" };
const header = (t: ThreadRef) => `${t.teamId}/${t.channelId}/${t.threadTs}`;
const INIT = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
};

let dir: string;
let app: RunningApp;
let clock: ManualClock;
const clients: Client[] = [];

beforeEach(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-team-sessions-"));
  clock = new ManualClock(Date.now());
  const config = testAppConfig(dir, TOKEN, { SLAUDE_MCP_MAX_SESSIONS: "4", SLAUDE_MCP_MAX_SESSIONS_PER_TEAM: "1" });
  app = await startApp({
    config,
    log: memoryLogger("warn"),
    clock,
    membership: new StaticMembership().add(THREAD.teamId, THREAD.channelId, ALICE),
    registry: parseRegistry(fixtureRegistryDoc(), "x"),
  });
});

afterEach(async () => {
  for (const c of clients.splice(0)) await c.close().catch(() => {});
  await app.close();
  rmSync(dir, { recursive: true, force: true });
});

async function openSession(thread: ThreadRef = THREAD): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${TOKEN}`, "X-Slaude-Thread": header(thread) } },
  });
  const client = new Client({ name: "team-host", version: "1" });
  await client.connect(transport);
  clients.push(client);
  return client;
}

async function alive(c: Client): Promise<boolean> {
  return c.listTools().then(
    () => true,
    () => false,
  );
}

const initialize = (thread: ThreadRef) =>
  fetch(`${app.url}/mcp`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      authorization: `Bearer ${TOKEN}`,
      "x-slaude-thread": header(thread),
    },
    body: JSON.stringify(INIT),
  });

describe("MCP sessions per team", () => {
  it("a team whose every session is busy gets 429 for another, while another team's session opens", async () => {
    await aliceThreadConnection(app.lifecycle);
    await app.broker.turns.set(THREAD, ALICE, clock.now());
    const a = await openSession();
    const hung = mcpCall(a, { tool: "hang", on_behalf_of: ALICE }, { timeout: 600_000 }).catch(() => "closed");
    await expect.poll(() => app.mcp.busySessionCount, { timeout: 20_000 }).toBe(1);
    const refused = await initialize(THREAD);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("5");
    expect(((await refused.json()) as { error: { message: string } }).error.message).toContain("for this team");
    // The process has room and team T2 has its own share: its session opens and works.
    const b = await openSession(THREAD_B);
    expect(await alive(b)).toBe(true);
    expect(app.mcp.sessionCount).toBe(2);
    const text = (await app.metrics.text()).body;
    expect(text).toMatch(/slaude_limit_refusals_total\{limit="mcp_sessions"\} 1/);
    expect(text).toMatch(/slaude_tenants_at_limit\{limit="mcp_sessions"\} 2/);
    await a.close();
    expect(await hung).toBe("closed");
  });

  it("a team at its cap closes its own idle session for a new one, never another team's (even an older one)", async () => {
    const b = await openSession(THREAD_B);
    const a1 = await openSession();
    // T2's session is the least recently used of the process; T1's new session must not take it.
    const a2 = await openSession();
    expect(await alive(b)).toBe(true);
    expect(await alive(a1)).toBe(false);
    expect(await alive(a2)).toBe(true);
    expect(app.mcp.sessionCount).toBe(2);
  });
});
