import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, afterEach, beforeAll, expect } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import type { ManualClock } from "../../src/clock/clock.js";
import { parseRegistry } from "../../src/config/registry.js";
import { memoryLogger } from "../../src/log/logger.js";
import { StaticMembership } from "../../src/membership/membership.js";
import { ALICE, fixtureRegistryDoc, THREAD } from "../integration/broker-harness.js";
import { testAppConfig } from "./app-config.js";
import { type PgCluster, startPostgres } from "./postgres.js";
import { type RawResponse, rawRequest } from "./raw-http.js";

// The harness of test/server/mcp-replicas.test.ts: real apps ("replicas", each with its own data
// directory and port) on one real PostgreSQL, real SDK clients over Streamable HTTP, and raw requests
// that name a session by its id, as a round-robin load balancer sends them.

export const TOKEN = `host-${randomBytes(8).toString("hex")}`;
const KEY = randomBytes(32).toString("base64");
export const THREAD_HEADER = `${THREAD.teamId}/${THREAD.channelId}/${THREAD.threadTs}`;
export const OTHER_THREAD_HEADER = `${THREAD.teamId}/${THREAD.channelId}/1700000000.000999`;
export const LIST = { jsonrpc: "2.0", id: 7, method: "tools/list" };
/** A raw 2025-06-18 initialize request. */
export const INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "replica-host", version: "1" } },
};

let cluster: PgCluster;
const dirs: string[] = [];
const apps: RunningApp[] = [];
const clients: Client[] = [];
const logs = new Map<RunningApp, ReturnType<typeof memoryLogger>>();

/** Registers the file's hooks: one PostgreSQL for the file; apps, clients and directories closed after each test. */
export function useMcpReplicas(): void {
  beforeAll(async () => {
    cluster = await startPostgres();
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) await c.close().catch(() => {});
    for (const a of apps.splice(0)) await a.close().catch(() => {});
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  afterAll(async () => {
    await cluster?.stop();
  });
}

/** The file's PostgreSQL (started by useMcpReplicas). */
export function pgCluster(): PgCluster {
  return cluster;
}

/** Closes `c` after the test. */
export function keepClient(c: Client): void {
  clients.push(c);
}

/** Removes directory `d` after the test. */
export function keepDir(d: string): void {
  dirs.push(d);
}

/** The log lines of `app`. */
export function logOf(app: RunningApp): readonly string[] {
  return logs.get(app)!.lines;
}

/** One replica on `url`: its own data directory and port; the key, host token and registry are shared. */
export async function replica(
  url: string,
  extra: Record<string, string> = {},
  clock?: ManualClock,
  vendorEnv: Record<string, string> = {},
): Promise<RunningApp> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-replica-"));
  dirs.push(dir);
  const log = memoryLogger("debug");
  const config = testAppConfig(dir, TOKEN, { SLAUDE_DATABASE_URL: url, SLAUDE_ENCRYPTION_KEY: KEY, ...extra });
  const app = await startApp({
    config,
    log,
    ...(clock ? { clock } : {}),
    membership: new StaticMembership().add(THREAD.teamId, THREAD.channelId, ALICE),
    registry: parseRegistry(fixtureRegistryDoc(vendorEnv), "x"),
  });
  apps.push(app);
  logs.set(app, log);
  return app;
}

/** Reports Alice's (or `userId`'s) turn in the thread to `app` (turns are replicated by their own work; here each replica is told). */
export async function reportTurn(app: RunningApp, userId: string = ALICE): Promise<void> {
  const r = await fetch(`${app.url}/v1/turns`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({
      team_id: THREAD.teamId,
      channel_id: THREAD.channelId,
      thread_ts: THREAD.threadTs,
      user_id: userId,
    }),
  });
  expect(r.status).toBe(204);
}

/** A client that initializes on `app`. */
export async function openOn(app: RunningApp): Promise<{ client: Client; id: string }> {
  const transport = new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${TOKEN}`, "X-Slaude-Thread": THREAD_HEADER } },
  });
  const client = new Client({ name: "replica-host", version: "1" });
  await client.connect(transport);
  clients.push(client);
  return { client, id: transport.sessionId! };
}

/**
 * A session opened on `app` by raw requests (initialize, then the initialized notification) and
 * nothing else: unlike an SDK client, no standalone GET stream follows in the background, so a test
 * that counts rebuilds at a session cap sees only its own requests.
 */
export async function openRaw(app: RunningApp): Promise<string> {
  const opened = await raw(app, "", { headers: { "x-slaude-thread": THREAD_HEADER }, body: INITIALIZE });
  expect(opened.status).toBe(200);
  const id = opened.headers["mcp-session-id"];
  expect(typeof id).toBe("string");
  const headers = { "x-slaude-thread": THREAD_HEADER, "mcp-protocol-version": "2025-06-18" };
  const initialized = await raw(app, id as string, {
    headers,
    body: { jsonrpc: "2.0", method: "notifications/initialized" },
  });
  expect(initialized.status).toBe(202);
  return id as string;
}

/** A client that continues session `id` on `app` (no initialize: the SDK resumes a known session id). */
export async function continueOn(
  app: RunningApp,
  id: string,
): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), {
    sessionId: id,
    requestInit: { headers: { Authorization: `Bearer ${TOKEN}`, "X-Slaude-Thread": THREAD_HEADER } },
  });
  const client = new Client({ name: "replica-host", version: "1" });
  await client.connect(transport);
  clients.push(client);
  return { client, transport };
}

/** A raw request to `app`'s /mcp naming session `id` (none when empty; headers exactly as given). */
export function raw(
  app: RunningApp,
  id: string,
  opts: { method?: string; headers?: Record<string, string>; body?: unknown } = {},
): Promise<RawResponse> {
  return rawRequest(app.port, {
    method: opts.method ?? "POST",
    path: "/mcp",
    headers: {
      accept: "application/json, text/event-stream",
      authorization: `Bearer ${TOKEN}`,
      ...(id ? { "mcp-session-id": id } : {}),
      ...opts.headers,
    },
    ...(opts.body !== undefined ? { body: opts.body } : {}),
  });
}

/** Opens the GET SSE stream of session `id` on `app`; resolves with the status and headers once they arrive (the stream stays open). */
export function openStream(
  app: RunningApp,
  id: string,
): Promise<{ status: number; contentType: string | undefined; close(): void; ended: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: "127.0.0.1",
        port: app.port,
        method: "GET",
        path: "/mcp",
        headers: { accept: "text/event-stream", authorization: `Bearer ${TOKEN}`, "mcp-session-id": id },
      },
      (res) => {
        const ended = new Promise<void>((done) => res.on("close", () => done()));
        res.resume();
        resolve({
          status: res.statusCode ?? 0,
          contentType: res.headers["content-type"],
          close: () => req.destroy(),
          ended,
        });
      },
    );
    req.on("error", reject);
    req.end();
  });
}

export function rebuilds(app: RunningApp): number {
  return logs.get(app)!.lines.filter((l) => l.includes("mcp session rebuilt from its record")).length;
}
