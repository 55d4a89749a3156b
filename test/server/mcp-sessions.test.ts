import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { ManualClock } from "../../src/clock/clock.js";
import { parseRegistry } from "../../src/config/registry.js";
import { memoryLogger } from "../../src/log/logger.js";
import { StaticMembership } from "../../src/membership/membership.js";
import { ALICE, aliceThreadConnection, fixtureRegistryDoc, mcpCall, THREAD } from "../integration/broker-harness.js";
import { testAppConfig } from "../support/app-config.js";

// Bounded MCP sessions (issue 9 item 15) and the body limit (item 16) over real HTTP: the real app,
// real SDK clients over Streamable HTTP, a manual clock for idle expiry. The cap here is 2 sessions
// and the idle time 60 s, set through the same environment variables an operator uses.

const TOKEN = `host-${randomBytes(8).toString("hex")}`;
const THREAD_HEADER = `${THREAD.teamId}/${THREAD.channelId}/${THREAD.threadTs}`;
const INIT = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
};

let dir: string;
let app: RunningApp;
let clock: ManualClock;
let log: ReturnType<typeof memoryLogger>;
const clients: Client[] = [];

beforeEach(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-sessions-"));
  log = memoryLogger("debug");
  clock = new ManualClock(Date.now());
  const config = testAppConfig(dir, TOKEN, { SLAUDE_MCP_MAX_SESSIONS: "2", SLAUDE_MCP_SESSION_IDLE_SECONDS: "60" });
  app = await startApp({
    config,
    log,
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

async function openSession(): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${TOKEN}`, "X-Slaude-Thread": THREAD_HEADER } },
  });
  const client = new Client({ name: "test-host", version: "1" });
  await client.connect(transport);
  clients.push(client);
  return client;
}

/** True when the session still answers; false when the broker no longer knows it (404). */
async function alive(c: Client): Promise<boolean> {
  try {
    await c.listTools();
    return true;
  } catch (err) {
    expect(String((err as Error).message)).toMatch(/404|Session not found/);
    return false;
  }
}

/** One raw POST /mcp; the body may be a string of any size. Resolves on the response, whatever the upload did. */
function post(body: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: "127.0.0.1",
        port: app.port,
        method: "POST",
        path: "/mcp",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          authorization: `Bearer ${TOKEN}`,
          "x-slaude-thread": THREAD_HEADER,
          ...headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }));
      },
    );
    // The broker may close the connection before the whole upload is sent: the answer is what counts.
    req.on("error", (err) => setTimeout(() => reject(err), 2_000));
    req.end(body);
  });
}

describe("MCP session bounds", () => {
  it("closes a session unused for SLAUDE_MCP_SESSION_IDLE_SECONDS; one used meanwhile stays open", async () => {
    const a = await openSession();
    const b = await openSession();
    expect(app.mcp.sessionCount).toBe(2);
    await clock.advanceAsync(30_000);
    expect(await alive(b)).toBe(true);
    expect(app.mcp.sessionCount).toBe(2);
    // The periodic sweep runs on the clock (every 15 s here): advancing past a's idle time closes it.
    await clock.advanceAsync(31_000);
    // a: 61 s unused; b: 31 s.
    expect(
      log.lines
        .filter((l) => l.includes("idle mcp sessions closed"))
        .map((l) => (JSON.parse(l) as { count: number }).count),
    ).toEqual([1]);
    expect(app.mcp.sweepIdle()).toBe(0);
    expect(app.mcp.sessionCount).toBe(1);
    expect(await alive(a)).toBe(false);
    expect(await alive(b)).toBe(true);
    expect(log.lines.some((l) => l.includes("idle mcp sessions closed"))).toBe(true);
  });

  it("at the cap, a new session evicts the least recently used idle one, never more than the cap", async () => {
    const a = await openSession();
    const b = await openSession();
    expect(await alive(a)).toBe(true); // b is now the least recently used
    const c = await openSession();
    expect(app.mcp.sessionCount).toBe(2);
    expect(log.lines.some((l) => l.includes("mcp session evicted"))).toBe(true);
    expect(await alive(b)).toBe(false);
    expect(await alive(a)).toBe(true);
    expect(await alive(c)).toBe(true);
  });

  it("when every session is busy, a new one is refused with 503 and a clear JSON-RPC error; a busy session is never evicted", async () => {
    await aliceThreadConnection(app.lifecycle);
    await app.broker.turns.set(THREAD, ALICE, clock.now());
    const a = await openSession();
    const b = await openSession();
    // Two calls that never finish keep both sessions busy.
    const hungA = mcpCall(a, { tool: "hang", on_behalf_of: ALICE }, { timeout: 600_000 }).catch(() => "closed");
    const hungB = mcpCall(b, { tool: "hang", on_behalf_of: ALICE }, { timeout: 600_000 }).catch(() => "closed");
    await expect.poll(() => app.mcp.busySessionCount, { timeout: 20_000 }).toBe(2);

    const refused = await post(JSON.stringify(INIT));
    expect(refused.status).toBe(503);
    const err = JSON.parse(refused.body) as { jsonrpc: string; error: { code: number; message: string } };
    expect(err.jsonrpc).toBe("2.0");
    expect(err.error.message).toContain("Too many open MCP sessions");
    // Idle expiry never closes a busy session either.
    await clock.advanceAsync(10 * 60_000);
    expect(app.mcp.sweepIdle()).toBe(0);
    expect(app.mcp.sessionCount).toBe(2);

    // Client a goes away: its request ends, its session is idle and the next one takes its place.
    await a.close();
    expect(await hungA).toBe("closed");
    await expect.poll(() => app.mcp.busySessionCount, { timeout: 20_000 }).toBe(1);
    const c = await openSession();
    expect(app.mcp.sessionCount).toBe(2);
    expect(await alive(c)).toBe(true);
    expect(await alive(b)).toBe(true);
    await b.close();
    expect(await hungB).toBe("closed");
  });
});

describe("MCP request body limit", () => {
  it("answers a body over 4 MiB with HTTP 413 and a JSON-RPC error, not 400 Parse error", async () => {
    const big = JSON.stringify({ ...INIT, params: { ...INIT.params, pad: "x".repeat(5 << 20) } });
    const r = await post(big);
    expect(r.status).toBe(413);
    const err = JSON.parse(r.body) as { jsonrpc: string; error: { code: number; message: string }; id: null };
    expect(err).toMatchObject({ jsonrpc: "2.0", id: null });
    expect(err.error.message).toContain("too large");
    expect(err.error.message).not.toContain("Parse error");
    // A body within the limit that is not JSON is still a parse error.
    const bad = await post("{not json");
    expect(bad.status).toBe(400);
    expect(bad.body).toContain("Parse error");
  });
});
