import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { loadConfig } from "../../src/config/env.js";
import { parseRegistry } from "../../src/config/registry.js";
import { memoryLogger } from "../../src/log/logger.js";
import { StaticMembership } from "../../src/membership/membership.js";
import { ALICE, aliceThreadConnection, fixtureRegistryDoc, THREAD } from "../integration/broker-harness.js";
import { type RawResponse, rawRequest } from "../support/raw-http.js";

// The 2026-07-28 era on /mcp in one process: real SDK v2 clients pinned to the revision (no
// initialize, no session), in `auto` mode, and a v1 client beside them; raw requests where the
// test names the revision, the envelope or the headers itself.

const TOKEN = `host-${randomBytes(8).toString("hex")}`;
const THREAD_HEADER = `${THREAD.teamId}/${THREAD.channelId}/${THREAD.threadTs}`;
const MODERN = "2026-07-28";
const ENVELOPE = {
  "io.modelcontextprotocol/protocolVersion": MODERN,
  "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" },
  "io.modelcontextprotocol/clientCapabilities": {},
};

let dir: string;
let events: string;
let app: RunningApp;
const closers: (() => Promise<void>)[] = [];

beforeEach(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-modern-"));
  events = path.join(dir, "vendor-events.log");
  const config = loadConfig({
    NODE_ENV: "test",
    SLAUDE_DATA_DIR: dir,
    PORT: "0",
    SLAUDE_HOST_TOKENS: TOKEN,
    SLAUDE_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
    PATH: process.env.PATH ?? "/usr/bin:/bin",
  });
  app = await startApp({
    config,
    log: memoryLogger("error"),
    membership: new StaticMembership().add(THREAD.teamId, THREAD.channelId, ALICE),
    registry: parseRegistry(fixtureRegistryDoc({ VENDOR_EVENT_LOG: events }), "x"),
  });
});

afterEach(async () => {
  for (const c of closers.splice(0)) await c().catch(() => {});
  await app.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A v2 client on /mcp with the host's headers, negotiating as `mode` says. */
async function v2(
  mode: "auto" | "legacy" | { pin: string },
  headers: Record<string, string> = {},
): Promise<{ client: ClientV2; transport: TransportV2 }> {
  const transport = new TransportV2(new URL(`${app.url}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${TOKEN}`, "X-Slaude-Thread": THREAD_HEADER, ...headers } },
  });
  const client = new ClientV2({ name: "modern-host", version: "1" }, { versionNegotiation: { mode } });
  await client.connect(transport);
  closers.push(() => client.close());
  return { client, transport };
}

async function reportTurn(): Promise<string> {
  const r = await fetch(`${app.url}/v1/turns`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({
      team_id: THREAD.teamId,
      channel_id: THREAD.channelId,
      thread_ts: THREAD.threadTs,
      user_id: ALICE,
    }),
  });
  expect(r.status).toBe(204);
  return r.headers.get("x-slaude-turn") ?? "";
}

/** A raw modern POST: the revision header, Mcp-Method, and the body as given. */
function modern(body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<RawResponse> {
  return rawRequest(app.port, {
    method: "POST",
    path: "/mcp",
    headers: {
      accept: "application/json, text/event-stream",
      authorization: `Bearer ${TOKEN}`,
      "x-slaude-thread": THREAD_HEADER,
      "mcp-protocol-version": MODERN,
      "mcp-method": String(body.method),
      ...headers,
    },
    body,
  });
}

const lines = (): string[] => (existsSync(events) ? readFileSync(events, "utf8").split("\n") : []);

describe("the 2026-07-28 era on /mcp", () => {
  it("a client pinned to 2026-07-28 lists the tools, describes, calls; no session anywhere", async () => {
    await aliceThreadConnection(app.lifecycle);
    await reportTurn();
    const { client, transport } = await v2({ pin: MODERN });
    expect(client.getNegotiatedProtocolVersion()).toBe(MODERN);
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual([
      "connect",
      "connections_list",
      "connections_revoke",
      "mcp_call",
      "mcp_describe",
    ]);
    const d = await client.callTool({ name: "mcp_describe", arguments: { service: "vendor", query: "item" } });
    expect((d.structuredContent as { status: string }).status, JSON.stringify(d.structuredContent)).toBe("ok");
    const r = await client.callTool({
      name: "mcp_call",
      arguments: { service: "vendor", tool: "echo", args: { text: "modern" }, on_behalf_of: ALICE },
    });
    expect(r.structuredContent, JSON.stringify(r.structuredContent)).toMatchObject({ status: "ok", ranAs: "own" });
    expect(transport.sessionId).toBeUndefined();
    expect(app.mcp.sessionCount).toBe(0);
  });

  it("names the turn by X-Slaude-Turn on every request; a malformed one is a 400 before anything runs", async () => {
    const turn = await reportTurn();
    const { client } = await v2({ pin: MODERN }, { "X-Slaude-Turn": turn });
    const r = await client.callTool({ name: "connections_list", arguments: {} });
    expect((r.structuredContent as { status: string }).status).toBe("ok");
    const bad = await modern(
      { jsonrpc: "2.0", id: 3, method: "tools/list", params: { _meta: ENVELOPE } },
      { "x-slaude-turn": "not a turn" },
    );
    expect(bad.status).toBe(400);
    expect(bad.body).toContain("X-Slaude-Turn");
  });

  it("answers server/discover with the revisions it speaks, its capabilities and its server info", async () => {
    const r = await modern({ jsonrpc: "2.0", id: 1, method: "server/discover", params: { _meta: ENVELOPE } });
    expect(r.status, r.body).toBe(200);
    const result = (JSON.parse(r.body) as { result: Record<string, unknown> & { _meta: Record<string, unknown> } })
      .result;
    expect(result.supportedVersions).toContain(MODERN);
    expect(result.capabilities).toMatchObject({ tools: { listChanged: false }, resources: { listChanged: false } });
    expect(result._meta["io.modelcontextprotocol/serverInfo"]).toMatchObject({ name: "slaude_connect" });
  });

  it("refuses a revision it does not speak with -32022 naming the supported ones", async () => {
    const r = await modern(
      {
        jsonrpc: "2.0",
        id: 2,
        method: "tools/list",
        params: { _meta: { ...ENVELOPE, "io.modelcontextprotocol/protocolVersion": "2099-01-01" } },
      },
      { "mcp-protocol-version": "2099-01-01" },
    );
    expect(r.status).toBe(400);
    const error = (JSON.parse(r.body) as { error: { code: number; data: { supported: string[]; requested: string } } })
      .error;
    expect(error.code).toBe(-32022);
    expect(error.data).toEqual({ supported: [MODERN], requested: "2099-01-01" });
  });

  it("needs X-Slaude-Thread on every modern request (else a clear 400), after the host token", async () => {
    const list = { jsonrpc: "2.0", id: 4, method: "tools/list", params: { _meta: ENVELOPE } };
    for (const thread of [undefined, "T1/C1", "T1/C1/not-a-ts"]) {
      const headers: Record<string, string> = { "x-slaude-thread": thread ?? "" };
      const r =
        thread === undefined
          ? await rawRequest(app.port, {
              method: "POST",
              path: "/mcp",
              headers: {
                accept: "application/json, text/event-stream",
                authorization: `Bearer ${TOKEN}`,
                "mcp-protocol-version": MODERN,
                "mcp-method": "tools/list",
              },
              body: list,
            })
          : await modern(list, headers);
      expect(r.status, r.body).toBe(400);
      expect(r.body).toContain(
        "X-Slaude-Thread: <team_id>/<channel_id>/<thread_ts> is required on every 2026-07-28 request",
      );
    }
    expect((await modern(list, { authorization: "Bearer wrong" })).status).toBe(401);
  });

  it("closing the call's stream cancels it: the vendor is told, after progress streamed on that response", async () => {
    await aliceThreadConnection(app.lifecycle);
    await reportTurn();
    const { client } = await v2({ pin: MODERN });
    const ac = new AbortController();
    const progress: number[] = [];
    const slow = { service: "vendor", tool: "slow", args: { steps: 200, delayMs: 100 }, on_behalf_of: ALICE };
    const call = client.callTool(
      { name: "mcp_call", arguments: slow },
      {
        signal: ac.signal,
        timeout: 60_000,
        onprogress: (p) => {
          progress.push(p.progress);
          ac.abort("the user gave up");
        },
      },
    );
    await expect(call).rejects.toThrow();
    expect(progress.length).toBeGreaterThan(0);
    await vi.waitFor(() => expect(lines().some((l) => /^cancelled \d+$/.test(l))).toBe(true), {
      timeout: 10_000,
      interval: 50,
    });
  });

  it("auto mode finds 2026-07-28; the default v2 client and a v1 client keep 2025 sessions", async () => {
    await reportTurn();
    const auto = await v2("auto");
    expect(auto.client.getNegotiatedProtocolVersion()).toBe(MODERN);
    expect((await auto.client.listTools()).tools).toHaveLength(5);

    const legacy = await v2("legacy");
    expect(legacy.transport.sessionId).toMatch(/[0-9a-f-]{36}/);
    expect((await legacy.client.callTool({ name: "connections_list", arguments: {} })).isError).not.toBe(true);

    const t1 = new TransportV1(new URL(`${app.url}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${TOKEN}`, "X-Slaude-Thread": THREAD_HEADER } },
    });
    const v1 = new ClientV1({ name: "v1-host", version: "1" });
    await v1.connect(t1);
    closers.push(() => v1.close());
    expect(t1.sessionId).toMatch(/[0-9a-f-]{36}/);
    expect((await v1.listTools()).tools).toHaveLength(5);
    expect(app.mcp.sessionCount).toBe(2);
  });
});
