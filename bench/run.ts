// npm run bench: latency and throughput of the broker against a direct call and a bare MCP SDK
// pass-through proxy, measured side by side in one run on the fixture vendor's echo tool.
// Figures are ratios of the same machine at the same moment; the absolute numbers are noisy.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { CallToolRequestSchema, CallToolResultSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { ALICE, THREAD, TSX_LOADER, makeHarness } from "../test/integration/broker-harness.js";
import { VENDOR_STDIO_PATH } from "../test/fixtures/paths.js";

const WARMUP = 200;
const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 2000);

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function measure(name: string, call: () => Promise<unknown>): Promise<{ name: string; p50: number; p99: number; mean: number }> {
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

function fmt(ms: number): string {
  return ms.toFixed(3).padStart(8);
}

async function main(): Promise<void> {
  const rows: string[] = [];
  const tmp = mkdtempSync(path.join(os.tmpdir(), "slaude-bench-"));
  const h = await makeHarness({ realClock: true, pool: { maxChildren: 64, idleMs: 3_600_000, acquireTimeoutMs: 60_000, stopGraceMs: 500 }, approvalTimeoutMs: 60_000 });
  try {
    // --- warm latency, one vendor each, same machine, same moment
    const direct = new Client({ name: "bench", version: "1" });
    await direct.connect(vendorTransport({ VENDOR_TOKEN: "direct", VENDOR_USER: "direct" }));
    const upstream = new Client({ name: "bench-proxy", version: "1" });
    await upstream.connect(vendorTransport({ VENDOR_TOKEN: "proxy", VENDOR_USER: "proxy" }));
    const proxied = await bareProxy(upstream);
    await h.connect(ALICE);
    const s = await h.session();
    s.turn.user = ALICE;
    const echo = { text: "ping" };
    const viaBroker = () => s.client.callTool({ name: "mcp_call", arguments: { service: "vendor", tool: "echo", args: echo, on_behalf_of: ALICE } });

    // Interleave the three so drift on a shared machine hits all of them alike.
    const results = { direct: [] as Awaited<ReturnType<typeof measure>>[], proxy: [] as Awaited<ReturnType<typeof measure>>[], broker: [] as Awaited<ReturnType<typeof measure>>[] };
    for (let round = 0; round < 3; round++) {
      results.direct.push(await measure("direct client → child", () => direct.callTool({ name: "echo", arguments: echo })));
      results.proxy.push(await measure("client → bare SDK proxy → child", () => proxied.callTool({ name: "echo", arguments: echo })));
      results.broker.push(await measure("client → broker → child", viaBroker));
    }
    const best = (xs: Awaited<ReturnType<typeof measure>>[]) => xs.reduce((a, b) => (b.p50 < a.p50 ? b : a));
    const d = best(results.direct);
    const p = best(results.proxy);
    const b = best(results.broker);
    rows.push(`warm echo latency (ms, best of 3 interleaved rounds of ${ITERATIONS} calls)`);
    rows.push(`  ${"path".padEnd(34)}      p50      p99     mean`);
    for (const r of [d, p, b]) rows.push(`  ${r.name.padEnd(34)} ${fmt(r.p50)} ${fmt(r.p99)} ${fmt(r.mean)}`);
    rows.push(`  ratio broker / bare proxy   p50 ${(b.p50 / p.p50).toFixed(3)}x   p99 ${(b.p99 / p.p99).toFixed(3)}x   (target <= 1.15x)`);
    rows.push(`  ratio broker / direct       p50 ${(b.p50 / d.p50).toFixed(3)}x   p99 ${(b.p99 / d.p99).toFixed(3)}x`);

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
    await direct.close();
    await proxied.close();
    await upstream.close();
  } finally {
    await h.close();
    rmSync(tmp, { recursive: true, force: true });
  }
  process.stdout.write(rows.join("\n") + "\n");
}

await main();
