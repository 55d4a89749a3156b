// npm run bench: latency and throughput of the broker against a direct call, a bare MCP SDK
// pass-through proxy and mcp-proxy (the most-used off-the-shelf MCP proxy), measured side by side
// in one run on the fixture vendor's echo tool; plus the Slack approval round trip.
// Figures are ratios of the same machine at the same moment; the absolute numbers are noisy.
//
// Paths measured (each its own fixture vendor child, same script, same tool):
//   direct                 SDK client → stdio child
//   bare SDK proxy         SDK client → in-memory → SDK server forwarding to a client → stdio child
//   broker (in-memory)     SDK client → in-memory → broker session → pool → stdio child
//   mcp-proxy CLI          SDK client → Streamable HTTP 127.0.0.1 → mcp-proxy process → stdio child
//   mcp-proxy library      SDK client → Streamable HTTP 127.0.0.1 → mcp-proxy in this process → stdio child
//   broker /mcp            SDK client → Streamable HTTP 127.0.0.1 → the app's /mcp (host token,
//                          thread header, turn reported on /v1/turns) → pool → stdio child
// The broker and the mcp-proxy library run in this process, like the client; the mcp-proxy CLI
// runs as the separate process it normally is. Both HTTP comparisons are shown.
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import net, { type AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { Client as UpstreamClient } from "@modelcontextprotocol/client";
import { StdioClientTransport as UpstreamStdio } from "@modelcontextprotocol/client/stdio";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { CallToolRequestSchema, CallToolResultSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { Server as ProxiedServer } from "@modelcontextprotocol/server";
import { proxyServer, startHTTPServer } from "mcp-proxy";
import { startApp, type RunningApp } from "../src/app/app.js";
import { loadConfig } from "../src/config/env.js";
import { parseRegistry } from "../src/config/registry.js";
import { memoryLogger } from "../src/log/logger.js";
import { StaticMembership } from "../src/membership/membership.js";
import { ALICE, BOB, THREAD, TSX_LOADER, fixtureRegistryDoc, makeHarness } from "../test/integration/broker-harness.js";
import { VENDOR_STDIO_PATH } from "../test/fixtures/paths.js";
import { startFakeSlack } from "../test/fixtures/slack/fake-slack-api.js";
import { blockActionPayload, postSlackInteraction } from "../test/fixtures/slack/signed-request.js";

// The SDK's StreamableHTTPClientTransport passes one long-lived AbortSignal to every fetch, and
// undici drops its per-request abort listener only when the request is garbage-collected; past 1500
// pending listeners Node prints a MaxListenersExceededWarning per call. That is the benchmark's
// clients (all HTTP paths alike), not a server under test: count those warnings instead of printing
// thousands of lines, and print every other warning as Node would.
let clientAbortListenerWarnings = 0;
process.removeAllListeners("warning");
process.on("warning", (w) => {
  if (w.name === "MaxListenersExceededWarning" && w.message.includes("abort listeners added to [AbortSignal]")) clientAbortListenerWarnings++;
  else process.stderr.write(`${w.name}: ${w.message}\n`);
});

const WARMUP = 200;
const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 2000);
const APPROVALS = Number(process.env.BENCH_APPROVALS ?? 20);
const MCP_PROXY_BIN = fileURLToPath(new URL("../node_modules/mcp-proxy/dist/bin/mcp-proxy.mjs", import.meta.url));

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

interface Measured {
  name: string;
  p50: number;
  p99: number;
  mean: number;
}

async function measure(name: string, call: () => Promise<unknown>): Promise<Measured> {
  for (let i = 0; i < WARMUP; i++) await call();
  const samples: number[] = [];
  for (let i = 0; i < ITERATIONS; i++) {
    const t = performance.now();
    await call();
    samples.push(performance.now() - t);
  }
  samples.sort((a, b) => a - b);
  return { name, p50: pct(samples, 50), p99: pct(samples, 99), mean: samples.reduce((a, b) => a + b, 0) / samples.length };
}

function vendorTransport(env: Record<string, string>) {
  return new StdioClientTransport({ command: process.execPath, args: ["--import", TSX_LOADER, VENDOR_STDIO_PATH], env: { PATH: process.env.PATH ?? "", ...env }, stderr: "ignore" });
}

/** A bare pass-through proxy: an SDK server whose tools/call forwards to a client of the child. */
async function bareProxy(upstream: Client): Promise<Client> {
  const server = new Server({ name: "bare-proxy", version: "1" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => upstream.listTools());
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => upstream.callTool(req.params, CallToolResultSchema, { signal: extra.signal }));
  const [a, b] = InMemoryTransport.createLinkedPair();
  await server.connect(b);
  const client = new Client({ name: "bench", version: "1" });
  await client.connect(a);
  return client;
}

async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const port = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

async function waitForHttp(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const r = await fetch(url);
      await r.body?.cancel();
      return;
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`${url} did not come up: ${(err as Error).message}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** An SDK client over Streamable HTTP. */
async function httpClient(url: string, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: "bench", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return client;
}

/** mcp-proxy as people run it: its CLI, its own process, Streamable HTTP only, fronting one stdio child. */
async function mcpProxyCli(): Promise<{ client: Client; close(): Promise<void> }> {
  const port = await freePort();
  const child: ChildProcess = spawn(
    process.execPath,
    [MCP_PROXY_BIN, "--port", String(port), "--host", "127.0.0.1", "--server", "stream", "--", process.execPath, "--import", TSX_LOADER, VENDOR_STDIO_PATH],
    { env: { PATH: process.env.PATH ?? "", HOME: os.homedir(), VENDOR_TOKEN: "mcp-proxy-cli", VENDOR_USER: "mcp-proxy-cli" }, stdio: ["ignore", "ignore", "ignore"], detached: true },
  );
  // Detached, so it would outlive a bench that dies half-way: take its group down on any exit.
  const killGroup = () => {
    try {
      if (child.pid) process.kill(-child.pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  };
  process.once("exit", killGroup);
  await waitForHttp(`http://127.0.0.1:${port}/ping`, 30_000);
  const client = await httpClient(`http://127.0.0.1:${port}/mcp`);
  return {
    client,
    async close() {
      await client.close().catch(() => {});
      // Its own group: the proxy and the vendor it spawned.
      if (child.pid) process.kill(-child.pid, "SIGTERM");
      await new Promise((r) => (child.exitCode !== null ? r(null) : child.once("exit", r)));
      process.off("exit", killGroup);
    },
  };
}

/** mcp-proxy's library API in this process (what its CLI does, without the separate process). */
async function mcpProxyLibrary(): Promise<{ client: Client; close(): Promise<void> }> {
  const upstream = new UpstreamClient({ name: "mcp-proxy", version: "1.0.0" }, { capabilities: {} });
  await upstream.connect(
    new UpstreamStdio({ command: process.execPath, args: ["--import", TSX_LOADER, VENDOR_STDIO_PATH], env: { PATH: process.env.PATH ?? "", VENDOR_TOKEN: "mcp-proxy-lib", VENDOR_USER: "mcp-proxy-lib" }, stderr: "ignore" }),
  );
  const capabilities = upstream.getServerCapabilities() ?? {};
  const port = await freePort();
  const http = await startHTTPServer({
    createServer: async () => {
      const server = new ProxiedServer(upstream.getServerVersion() ?? { name: "upstream", version: "0" }, { capabilities });
      await proxyServer({ client: upstream, server, serverCapabilities: capabilities });
      return server;
    },
    host: "127.0.0.1",
    port,
    sseEndpoint: null,
    streamEndpoint: "/mcp",
  });
  const client = await httpClient(`http://127.0.0.1:${port}/mcp`);
  return {
    client,
    async close() {
      await client.close().catch(() => {});
      await http.close();
      await upstream.close();
    },
  };
}

const HOST_TOKEN = `bench-host-${randomBytes(12).toString("hex")}`;

/** The real app on 127.0.0.1 (host token, static membership, the fixture registry), plus a host session in THREAD. */
async function brokerOverHttp(dataDir: string): Promise<{ app: RunningApp; client: Client; close(): Promise<void> }> {
  const app = await startApp({
    config: loadConfig({
      NODE_ENV: "test",
      SLAUDE_DATA_DIR: dataDir,
      PORT: "0",
      SLAUDE_HOST_TOKENS: HOST_TOKEN,
      SLAUDE_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
      PATH: process.env.PATH ?? "/usr/bin:/bin",
    }),
    log: memoryLogger("warn"),
    membership: new StaticMembership().add(THREAD.teamId, THREAD.channelId, ALICE, BOB),
    registry: parseRegistry(fixtureRegistryDoc(), "bench-registry"),
  });
  await seedThread(app, THREAD, "broker-http", ALICE);
  const client = await httpClient(`${app.url}/mcp`, { Authorization: `Bearer ${HOST_TOKEN}`, "X-Slaude-Thread": `${THREAD.teamId}/${THREAD.channelId}/${THREAD.threadTs}` });
  return {
    app,
    client,
    async close() {
      await client.close().catch(() => {});
      await app.close();
    },
  };
}

/** Gives Alice a thread connection (token `token`) and reports `turnUser`'s turn over /v1/turns. */
async function seedThread(app: RunningApp, thread: { teamId: string; channelId: string; threadTs: string }, token: string, turnUser: string): Promise<void> {
  await app.lifecycle.create({
    teamId: thread.teamId,
    ownerUserId: ALICE,
    service: "vendor",
    scope: "thread",
    channelId: thread.channelId,
    threadTs: thread.threadTs,
    credential: { kind: "fields", fields: { token, user: ALICE } },
    createdBy: ALICE,
  });
  const turn = await fetch(`${app.url}/v1/turns`, {
    method: "POST",
    headers: { authorization: `Bearer ${HOST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ team_id: thread.teamId, channel_id: thread.channelId, thread_ts: thread.threadTs, user_id: turnUser }),
  });
  if (turn.status !== 204) throw new Error(`/v1/turns answered ${turn.status}`);
}

/**
 * The Slack approval round trip: Bob's call on Alice's connection waits for her; the bench clicks
 * Allow once with a signed block_actions POST to /slack/events and times click sent → call result.
 */
async function approvalRoundTrip(dataDir: string, n: number): Promise<number[]> {
  const secret = `bench-signing-${randomBytes(8).toString("hex")}`;
  const fake = await startFakeSlack({ admins: [] });
  const thread = { teamId: fake.teamId, channelId: "C0BENCH01", threadTs: "1700000003.000100" };
  fake.setMembers(thread.channelId, [ALICE, BOB]);
  const app = await startApp({
    config: loadConfig({
      NODE_ENV: "test",
      SLAUDE_DATA_DIR: dataDir,
      PORT: "0",
      SLAUDE_HOST_TOKENS: HOST_TOKEN,
      SLAUDE_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
      SLACK_BOT_TOKEN: fake.botToken,
      SLACK_SIGNING_SECRET: secret,
      SLACK_API_URL: fake.apiUrl,
      SLAUDE_APPROVAL_TIMEOUT_SECONDS: "60",
      PATH: process.env.PATH ?? "/usr/bin:/bin",
    }),
    log: memoryLogger("warn"),
    registry: parseRegistry(fixtureRegistryDoc(), "bench-registry"),
  });
  const client = await httpClient(`${app.url}/mcp`, { Authorization: `Bearer ${HOST_TOKEN}`, "X-Slaude-Thread": `${thread.teamId}/${thread.channelId}/${thread.threadTs}` });
  try {
    await seedThread(app, thread, "approval-bench", BOB);
    const dm = `D${ALICE}`;
    const cards = () => fake.callsOf("chat.postMessage").filter((c) => c.args.channel === dm);
    const times: number[] = [];
    // One unmeasured round first: it spawns Alice's child, so every measured round finds it warm.
    for (let i = 0; i <= n; i++) {
      const pending = client.callTool({ name: "mcp_call", arguments: { service: "vendor", tool: "read_item", args: { id: String(i) }, on_behalf_of: BOB } });
      await fake.waitFor("chat.postMessage", () => cards().length > i, 15_000);
      const post = cards()[i]!;
      const ts = String(post.response?.ts);
      const actions = (post.args.blocks as { type: string; elements?: { action_id: string; value: string }[] }[]).find((b) => b.type === "actions");
      const allowOnce = actions?.elements?.find((e) => e.action_id === "approval_allow_once");
      if (!allowOnce) throw new Error("approval card without an Allow once button");
      const t0 = performance.now();
      const click = postSlackInteraction(
        `${app.url}/slack/events`,
        secret,
        blockActionPayload({ userId: ALICE, teamId: thread.teamId, actionId: "approval_allow_once", value: allowOnce.value, channelId: dm, messageTs: ts, responseUrl: fake.responseUrl(`bench-${i}`) }),
      );
      const r = await pending;
      const t1 = performance.now();
      const ack = await click;
      if (ack.status !== 200) throw new Error(`/slack/events answered ${ack.status}`);
      const ranAs = (r.structuredContent as { ranAs?: string } | undefined)?.ranAs;
      if (r.isError || ranAs !== "approval_once") throw new Error(`approved call did not run as approval_once: ${JSON.stringify(r.structuredContent)}`);
      if (i > 0) times.push(t1 - t0);
    }
    return times;
  } finally {
    await client.close().catch(() => {});
    await app.close();
    await fake.close();
  }
}

function fmt(ms: number): string {
  return ms.toFixed(3).padStart(8);
}

async function main(): Promise<void> {
  const rows: string[] = [];
  const summary: string[] = [];
  const tmp = mkdtempSync(path.join(os.tmpdir(), "slaude-bench-"));
  const h = await makeHarness({ realClock: true, pool: { maxChildren: 64, idleMs: 3_600_000, acquireTimeoutMs: 60_000, stopGraceMs: 500 }, approvalTimeoutMs: 60_000 });
  try {
    // --- warm latency, one vendor each, same machine, same moment
    const direct = new Client({ name: "bench", version: "1" });
    await direct.connect(vendorTransport({ VENDOR_TOKEN: "direct", VENDOR_USER: "direct" }));
    const upstream = new Client({ name: "bench-proxy", version: "1" });
    await upstream.connect(vendorTransport({ VENDOR_TOKEN: "proxy", VENDOR_USER: "proxy" }));
    const proxied = await bareProxy(upstream);
    const cli = await mcpProxyCli();
    const lib = await mcpProxyLibrary();
    const brokerHttp = await brokerOverHttp(path.join(tmp, "broker-http"));
    await h.connect(ALICE);
    const s = await h.session();
    s.turn.user = ALICE;
    const echo = { text: "ping" };
    const viaBroker = () => s.client.callTool({ name: "mcp_call", arguments: { service: "vendor", tool: "echo", args: echo, on_behalf_of: ALICE } });
    const viaBrokerHttp = () => brokerHttp.client.callTool({ name: "mcp_call", arguments: { service: "vendor", tool: "echo", args: echo, on_behalf_of: ALICE } });
    // Each path answers correctly before it is timed.
    for (const [name, r] of [
      ["mcp-proxy CLI", await cli.client.callTool({ name: "echo", arguments: echo })],
      ["mcp-proxy library", await lib.client.callTool({ name: "echo", arguments: echo })],
      ["broker /mcp", await viaBrokerHttp()],
    ] as const) {
      if (r.isError || !JSON.stringify(r.content).includes("ping")) throw new Error(`${name} did not echo: ${JSON.stringify(r)}`);
    }

    // Interleave the paths so drift on a shared machine hits all of them alike.
    type Path = "direct" | "proxy" | "broker" | "mcpProxyCli" | "mcpProxyLib" | "brokerHttp";
    const calls: [Path, string, () => Promise<unknown>][] = [
      ["direct", "direct client → child", () => direct.callTool({ name: "echo", arguments: echo })],
      ["proxy", "client → bare SDK proxy → child", () => proxied.callTool({ name: "echo", arguments: echo })],
      ["broker", "client → broker → child", viaBroker],
      ["mcpProxyCli", "client → mcp-proxy CLI (HTTP) → child", () => cli.client.callTool({ name: "echo", arguments: echo })],
      ["mcpProxyLib", "client → mcp-proxy lib (HTTP) → child", () => lib.client.callTool({ name: "echo", arguments: echo })],
      ["brokerHttp", "client → broker /mcp (HTTP) → child", viaBrokerHttp],
    ];
    const results = Object.fromEntries(calls.map(([k]) => [k, [] as Measured[]])) as Record<Path, Measured[]>;
    for (let round = 0; round < 3; round++) {
      for (const [k, name, call] of calls) results[k].push(await measure(name, call));
    }
    const best = (xs: Measured[]) => xs.reduce((a, b) => (b.p50 < a.p50 ? b : a));
    const d = best(results.direct);
    const p = best(results.proxy);
    const b = best(results.broker);
    const mc = best(results.mcpProxyCli);
    const ml = best(results.mcpProxyLib);
    const bh = best(results.brokerHttp);
    rows.push(`warm echo latency (ms, best of 3 interleaved rounds of ${ITERATIONS} calls)`);
    rows.push(`  ${"path".padEnd(38)}      p50      p99     mean`);
    for (const r of [d, p, b]) rows.push(`  ${r.name.padEnd(38)} ${fmt(r.p50)} ${fmt(r.p99)} ${fmt(r.mean)}`);
    rows.push(`  ratio broker / bare proxy   p50 ${(b.p50 / p.p50).toFixed(3)}x   p99 ${(b.p99 / p.p99).toFixed(3)}x   (target <= 1.15x)`);
    rows.push(`  ratio broker / direct       p50 ${(b.p50 / d.p50).toFixed(3)}x   p99 ${(b.p99 / d.p99).toFixed(3)}x`);
    rows.push("");
    rows.push(`over HTTP on 127.0.0.1, same fixture vendor (ms, best of the same 3 rounds)`);
    rows.push(`  ${"path".padEnd(38)}      p50      p99     mean`);
    for (const r of [mc, ml, bh]) rows.push(`  ${r.name.padEnd(38)} ${fmt(r.p50)} ${fmt(r.p99)} ${fmt(r.mean)}`);
    rows.push(`  ratio broker /mcp / mcp-proxy CLI       p50 ${(bh.p50 / mc.p50).toFixed(3)}x   p99 ${(bh.p99 / mc.p99).toFixed(3)}x`);
    rows.push(`  ratio broker /mcp / mcp-proxy library   p50 ${(bh.p50 / ml.p50).toFixed(3)}x   p99 ${(bh.p99 / ml.p99).toFixed(3)}x`);
    rows.push(`  ratio broker /mcp / direct              p50 ${(bh.p50 / d.p50).toFixed(3)}x   p99 ${(bh.p99 / d.p99).toFixed(3)}x`);
    const ratioRow = (r: Measured) =>
      `  ${r.name.padEnd(38)} ${fmt(r.p50)} ${fmt(r.p99)}   ${(r.p50 / d.p50).toFixed(2).padStart(6)}x ${(r.p99 / d.p99).toFixed(2).padStart(6)}x   ${(r.p50 / mc.p50).toFixed(2).padStart(6)}x ${(r.p99 / mc.p99).toFixed(2).padStart(6)}x`;
    summary.push(`  ${"warm echo (ms)".padEnd(38)}      p50      p99   ÷direct p50/p99   ÷mcp-proxy CLI p50/p99`);
    for (const r of [d, p, b, mc, ml, bh]) summary.push(ratioRow(r));
    await cli.close();
    await lib.close();
    await brokerHttp.close();

    // --- cold first call: broker (lazy spawn + initialize + call) vs the vendor's own spawn + initialize + call
    const coldVendor: number[] = [];
    const coldBroker: number[] = [];
    for (let i = 0; i < 5; i++) {
      // Like the broker's children, the vendor gets a fresh HOME/TMPDIR (tsx keeps its transform cache in TMPDIR).
      const fresh = mkdtempSync(path.join(tmp, "cold-"));
      let t = performance.now();
      const c = new Client({ name: "bench", version: "1" });
      await c.connect(vendorTransport({ VENDOR_TOKEN: `cold${i}`, VENDOR_USER: "cold", HOME: fresh, TMPDIR: fresh }));
      await c.callTool({ name: "echo", arguments: echo });
      coldVendor.push(performance.now() - t);
      await c.close();
      const thread = { ...THREAD, threadTs: `1700000001.${String(i).padStart(6, "0")}` };
      await h.connect(ALICE, { thread });
      const cs = await h.session(thread);
      cs.turn.user = ALICE;
      t = performance.now();
      await cs.client.callTool({ name: "mcp_call", arguments: { service: "vendor", tool: "echo", args: echo, on_behalf_of: ALICE } });
      coldBroker.push(performance.now() - t);
    }
    coldVendor.sort((a, b2) => a - b2);
    coldBroker.sort((a, b2) => a - b2);
    const cv = pct(coldVendor, 50);
    const cb = pct(coldBroker, 50);
    rows.push("");
    rows.push("cold first call (ms, median of 5)");
    rows.push(`  vendor's own spawn + initialize + call   ${fmt(cv)}`);
    rows.push(`  broker lazy spawn + initialize + call    ${fmt(cb)}`);
    rows.push(`  extra                                    ${fmt(cb - cv)}   (target <= 50 ms)`);
    summary.push(`  ${"cold first call (ms, median of 5)".padEnd(38)} vendor ${cv.toFixed(0)}, broker ${cb.toFixed(0)}, extra ${(cb - cv).toFixed(0)}`);

    // --- throughput: 8 concurrent sessions over 50 connections
    const CONNS = 50;
    const SESSIONS = 8;
    const CALLS_PER_SESSION = Number(process.env.BENCH_TP_CALLS ?? 250);
    const users = Array.from({ length: CONNS }, (_, i) => `UBENCH${String(i).padStart(4, "0")}`);
    const tpThread = { ...THREAD, threadTs: "1700000002.000001" };
    h.membership.add(tpThread.teamId, tpThread.channelId, ...users);
    for (const u of users) await h.connect(u, { thread: tpThread });
    const auditBefore = await h.store.audit.count({ event: "call" });
    const sessions = await Promise.all(Array.from({ length: SESSIONS }, () => h.session(tpThread)));
    // Warm every connection's child first: throughput measures calls, not spawns.
    let t = performance.now();
    for (let i = 0; i < CONNS; i += SESSIONS) {
      await Promise.all(
        sessions.map(async (sess, k) => {
          const u = users[i + k];
          if (!u) return;
          sess.turn.user = u;
          await sess.client.callTool({ name: "mcp_call", arguments: { service: "vendor", tool: "echo", args: echo, on_behalf_of: u } });
        }),
      );
    }
    const warmMs = performance.now() - t;
    let errors = 0;
    const latencies: number[] = [];
    t = performance.now();
    await Promise.all(
      sessions.map(async (sess, k) => {
        for (let i = 0; i < CALLS_PER_SESSION; i++) {
          const u = users[(k + i * SESSIONS) % CONNS]!;
          sess.turn.user = u;
          const t0 = performance.now();
          const r = await sess.client.callTool({ name: "mcp_call", arguments: { service: "vendor", tool: "echo", args: echo, on_behalf_of: u } });
          latencies.push(performance.now() - t0);
          if (r.isError || (r.structuredContent as { ranAs?: string }).ranAs !== "own") errors++;
        }
      }),
    );
    const elapsed = performance.now() - t;
    const total = SESSIONS * CALLS_PER_SESSION;
    const auditAfter = await h.store.audit.count({ event: "call" });
    latencies.sort((a, b2) => a - b2);
    rows.push("");
    rows.push(`throughput: ${SESSIONS} concurrent sessions over ${CONNS} connections (${CONNS} children warmed in ${(warmMs / 1000).toFixed(1)} s)`);
    rows.push(`  calls ${total}, errors ${errors}, ${(total / (elapsed / 1000)).toFixed(0)} calls/s, p50 ${latencies[Math.floor(total / 2)]!.toFixed(2)} ms, p99 ${pct(latencies, 99).toFixed(2)} ms`);
    rows.push(`  audit rows for these calls: ${auditAfter - auditBefore - CONNS} (calls ${total}) ${auditAfter - auditBefore - CONNS === total ? "OK" : "MISMATCH"}`);
    rows.push(`  live children: ${h.broker.pool.stats().live}`);
    summary.push(
      `  ${"throughput (in-memory sessions)".padEnd(38)} ${(total / (elapsed / 1000)).toFixed(0)} calls/s, p50 ${pct(latencies, 50).toFixed(2)} ms, p99 ${pct(latencies, 99).toFixed(2)} ms, errors ${errors}`,
    );
    await direct.close();
    await proxied.close();
    await upstream.close();
  } finally {
    await h.close();
  }

  try {
    // --- Slack approval round trip: click sent → call result received
    const times = (await approvalRoundTrip(path.join(tmp, "approval"), APPROVALS)).sort((a, b2) => a - b2);
    rows.push("");
    rows.push(`Slack approval round trip, Allow once: signed block_actions sent → approved call's result received (ms, ${times.length} rounds)`);
    rows.push(`  median ${fmt(pct(times, 50))}   min ${fmt(times[0]!)}   max ${fmt(times.at(-1)!)}`);
    summary.push(`  ${"Slack approval click → result (ms)".padEnd(38)} median ${pct(times, 50).toFixed(1)}, min ${times[0]!.toFixed(1)}, max ${times.at(-1)!.toFixed(1)} (n=${times.length})`);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  rows.push("");
  rows.push("summary");
  rows.push(...summary);
  if (clientAbortListenerWarnings) rows.push(`  (${clientAbortListenerWarnings} MaxListenersExceededWarning from the SDK HTTP client's shared AbortSignal, not printed)`);
  process.stdout.write(rows.join("\n") + "\n");
}

await main();
