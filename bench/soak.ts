// Load against the real app: many connections, few vendor slots, concurrent host sessions over the
// real /mcp endpoint (Streamable HTTP on 127.0.0.1), turns reported through /v1/turns. Checks that
// every call succeeds, that the audit log has exactly one `call` row per call, and that the number
// of live vendor children never exceeds the pool cap (sampled from the pool and from /proc).
//
//   npx tsx bench/soak.ts                      the long version: minutes, thousands of calls
//   SOAK_CALLS=20000 SOAK_MAX_SECONDS=900 npx tsx bench/soak.ts
//   SOAK_HOT_SET=16 npx tsx bench/soak.ts      more connections in use than slots: most calls spawn
// Knobs: SOAK_MAX_CHILDREN (8), SOAK_CONNECTIONS (64), SOAK_HOT_SET (8), SOAK_SESSIONS (16),
// SOAK_CALLS (6000, at most 100000), SOAK_TURN_LENGTH (2), SOAK_MAX_SECONDS (300, at most 3600).
//
// test/load/load.test.ts runs the short version of the same driver (`runLoad`) as part of npm test.
// Everything is loopback: the app binds 127.0.0.1, children are the fixture vendor.
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { type RunningApp, startApp } from "../src/app/app.js";
import { loadConfig } from "../src/config/env.js";
import { parseRegistry } from "../src/config/registry.js";
import type { ThreadRef } from "../src/domain/thread.js";
import { memoryLogger } from "../src/log/logger.js";
import { StaticMembership } from "../src/membership/membership.js";
import { fixtureRegistryDoc } from "../test/integration/broker-harness.js";
import { countClientAbortWarnings } from "./lib/client-warnings.js";

/** The shape of one load run. */
export interface LoadOptions {
  /** Pool cap (SLAUDE_POOL_MAX_CHILDREN); keep it far below `connections` so eviction is exercised. */
  readonly maxChildren: number;
  /** Stored connections: one user-scoped connection per user, usable from every session's thread. */
  readonly connections: number;
  /**
   * How many connections are in use at any moment. The hot set moves window by window over all
   * connections during the run, so every one is spawned and most are later evicted. At or below the cap, calls mostly reuse live
   * children; above it, sessions evict each other's idle children between calls and most calls spawn.
   */
  readonly hotSet: number;
  /** Concurrent host sessions, one thread each. */
  readonly sessions: number;
  /** Total mcp_call calls (spread evenly over the sessions). */
  readonly calls: number;
  /** Calls a session makes in one turn before the turn passes to another user. */
  readonly turnLength: number;
  /** Hard stop: sessions stop starting calls after this long (the run still reports and checks). */
  readonly maxMs: number;
  /** How often the pool and /proc are sampled. */
  readonly sampleEveryMs: number;
  /** Progress lines (soak only). */
  readonly progress?: (line: string) => void;
}

/** What a load run measured. */
export interface LoadReport {
  readonly calls: number;
  readonly errors: readonly string[];
  readonly elapsedMs: number;
  readonly callsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  /** `call` audit rows written during the run, and how many of them ran as the caller's own connection. */
  readonly auditCalls: number;
  readonly auditOwn: number;
  /** Per connection: calls made vs audit rows, for the ones that differ (empty when all match). */
  readonly auditMismatches: readonly string[];
  readonly cap: number;
  /** Highest `pool.stats().live` and `live + stopping` seen. */
  readonly maxPoolLive: number;
  readonly maxPoolLiveOrStopping: number;
  /** Highest number of distinct child process groups seen in /proc. */
  readonly maxProcGroups: number;
  readonly samples: number;
  readonly spawned: number;
  /** Child process groups left after the app closed (must be 0). */
  readonly groupsAfterClose: number;
  readonly stoppedEarly: boolean;
}

/**
 * Process groups led by this process's live (non-zombie) children, read from /proc: vendor children
 * are spawned as group leaders; helpers that stay in our own group (tsx's esbuild service) are not counted.
 */
export function childProcessGroups(): Set<number> {
  const groups = new Set<number>();
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${process.pid}/task`);
  } catch {
    return groups;
  }
  for (const tid of tasks) {
    let children: string;
    try {
      children = readFileSync(`/proc/${process.pid}/task/${tid}/children`, "utf8");
    } catch {
      continue;
    }
    for (const pid of children.trim().split(/\s+/).filter(Boolean)) {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
        const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        // fields[0] is the state, fields[2] the process group; an exited child waiting to be reaped is no child.
        if (fields[0] === "Z" || fields[0] === "X") continue;
        if (Number(fields[2]) === Number(pid)) groups.add(Number(pid));
      } catch {
        // Gone between the listing and the read.
      }
    }
  }
  return groups;
}

function pct(sorted: readonly number[], p: number): number {
  if (!sorted.length) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** A deterministic PRNG (mulberry32), so a run's call pattern is reproducible. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const TEAM = "T1";
const CHANNEL = "C1";

/** Starts the app with a pool cap of `maxChildren` and `connections` user-scoped connections. */
async function bootLoadApp(o: LoadOptions) {
  const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-load-"));
  const hostToken = `host-${randomBytes(12).toString("hex")}`;
  const config = loadConfig({
    NODE_ENV: "test",
    SLAUDE_DATA_DIR: dir,
    PORT: "0",
    SLAUDE_HOST_TOKENS: hostToken,
    SLAUDE_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
    SLAUDE_POOL_MAX_CHILDREN: String(o.maxChildren),
    PATH: process.env.PATH ?? "/usr/bin:/bin",
  });
  const userIds = Array.from({ length: o.connections }, (_, i) => `ULOAD${String(i).padStart(5, "0")}`);
  const membership = new StaticMembership().add(TEAM, CHANNEL, ...userIds);
  // Warnings and errors only: a soak of thousands of calls must not keep every debug line in memory.
  const log = memoryLogger("warn");
  const app = await startApp({
    config,
    log,
    membership,
    registry: parseRegistry(fixtureRegistryDoc(), "load-registry"),
  });
  const users: { user: string; connectionId: string }[] = [];
  for (const user of userIds) {
    const c = await app.lifecycle.create({
      teamId: TEAM,
      ownerUserId: user,
      service: "vendor",
      scope: "user",
      credential: { kind: "fields", fields: { token: `load-${randomBytes(6).toString("hex")}`, user } },
      createdBy: user,
    });
    users.push({ user, connectionId: c.id });
  }
  const threads: ThreadRef[] = Array.from({ length: o.sessions }, (_, s) => ({
    teamId: TEAM,
    channelId: CHANNEL,
    threadTs: `1700000100.${String(s).padStart(6, "0")}`,
  }));
  return { dir, app, hostToken, threads, users, log };
}

async function reportTurn(app: RunningApp, hostToken: string, thread: ThreadRef, user: string): Promise<void> {
  const r = await fetch(`${app.url}/v1/turns`, {
    method: "POST",
    headers: { authorization: `Bearer ${hostToken}`, "content-type": "application/json" },
    body: JSON.stringify({
      team_id: thread.teamId,
      channel_id: thread.channelId,
      thread_ts: thread.threadTs,
      user_id: user,
    }),
  });
  if (r.status !== 204) throw new Error(`/v1/turns answered ${r.status}`);
}

/**
 * Runs one load: `sessions` real MCP clients over HTTP, each in its own thread, take turns among
 * their thread's users and call `echo` through mcp_call on the caller's own connection.
 */
export async function runLoad(o: LoadOptions): Promise<LoadReport> {
  const { dir, app, hostToken, threads, users } = await bootLoadApp(o);
  const errors: string[] = [];
  const latencies: number[] = [];
  const perConnection = new Map<string, number>();
  let maxPoolLive = 0;
  let maxPoolLiveOrStopping = 0;
  let maxProcGroups = 0;
  let samples = 0;
  const sample = () => {
    const s = app.broker.pool.stats();
    maxPoolLive = Math.max(maxPoolLive, s.live);
    maxPoolLiveOrStopping = Math.max(maxPoolLiveOrStopping, s.live + s.stopping);
    maxProcGroups = Math.max(maxProcGroups, childProcessGroups().size);
    samples++;
  };
  const sampler = setInterval(sample, o.sampleEveryMs);
  const clients: Client[] = [];
  let stoppedEarly = false;
  let done = 0;
  const auditBefore = await app.store.audit.count({ event: "call" });
  const since = Date.now();
  const t0 = performance.now();
  try {
    for (const thread of threads) {
      const transport = new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), {
        requestInit: {
          headers: {
            Authorization: `Bearer ${hostToken}`,
            "X-Slaude-Thread": `${thread.teamId}/${thread.channelId}/${thread.threadTs}`,
          },
        },
      });
      const client = new Client({ name: "load-host", version: "1" });
      await client.connect(transport);
      clients.push(client);
    }
    const perSession = Math.ceil(o.calls / o.sessions);
    // The hot set moves by whole windows so that over the run it covers every connection.
    const windows = Math.max(1, Math.ceil(users.length / o.hotSet));
    let progressAt = performance.now();
    await Promise.all(
      threads.map(async (thread, k) => {
        const client = clients[k]!;
        const rnd = prng(0x5eed + k);
        let made = 0;
        while (made < perSession && done < o.calls) {
          if (performance.now() - t0 > o.maxMs) {
            stoppedEarly = true;
            return;
          }
          // The turn passes to a random user of the current hot set, who makes a few calls.
          const window = Math.min(windows - 1, Math.floor((done * windows) / o.calls));
          const { user, connectionId } = users[(window * o.hotSet + Math.floor(rnd() * o.hotSet)) % users.length]!;
          await reportTurn(app, hostToken, thread, user);
          for (let j = 0; j < o.turnLength && made < perSession && done < o.calls; j++) {
            made++;
            done++;
            const payload = `load-${k}-${made}`;
            const ts = performance.now();
            try {
              const r = await client.callTool({
                name: "mcp_call",
                arguments: { service: "vendor", tool: "echo", args: { text: payload }, on_behalf_of: user },
              });
              latencies.push(performance.now() - ts);
              const s = r.structuredContent as { status?: string; code?: string; ranAs?: string } | undefined;
              const text = (r.content as { type: string; text?: string }[]).map((c) => c.text ?? "").join("\n");
              if (r.isError || s?.ranAs !== "own" || !text.includes(payload))
                errors.push(`${user}: ${s?.code ?? s?.status ?? "?"} ${text.slice(0, 200)}`);
            } catch (err) {
              latencies.push(performance.now() - ts);
              errors.push(`${user}: threw ${(err as Error).message}`);
            }
            perConnection.set(connectionId, (perConnection.get(connectionId) ?? 0) + 1);
            if (o.progress && performance.now() - progressAt > 10_000) {
              progressAt = performance.now();
              const st = app.broker.pool.stats();
              const mem = process.memoryUsage();
              o.progress(
                `  ${done} calls, ${errors.length} errors, live ${st.live}/${o.maxChildren}, spawned ${st.spawned}, rss ${(mem.rss / 2 ** 20).toFixed(0)} MB, heap ${(mem.heapUsed / 2 ** 20).toFixed(0)} MB, ${((performance.now() - t0) / 1000).toFixed(0)} s`,
              );
            }
          }
        }
      }),
    );
  } finally {
    clearInterval(sampler);
  }
  sample();
  const elapsedMs = performance.now() - t0;
  // The query caps its answer (1000 rows by default): ask for all of them.
  const rows = await app.store.audit.query({ event: "call", since, limit: latencies.length + 1000 });
  const auditCalls = (await app.store.audit.count({ event: "call" })) - auditBefore;
  const auditOwn = rows.filter((r) => r.decision === "own").length;
  const rowsPer = new Map<string, number>();
  for (const r of rows) if (r.connectionId) rowsPer.set(r.connectionId, (rowsPer.get(r.connectionId) ?? 0) + 1);
  const auditMismatches: string[] = [];
  for (const id of new Set([...perConnection.keys(), ...rowsPer.keys()])) {
    if ((perConnection.get(id) ?? 0) !== (rowsPer.get(id) ?? 0))
      auditMismatches.push(`${id}: calls ${perConnection.get(id) ?? 0}, audit rows ${rowsPer.get(id) ?? 0}`);
  }
  const spawned = app.broker.pool.stats().spawned;
  for (const c of clients) await c.close().catch(() => {});
  await app.close();
  const groupsAfterClose = childProcessGroups().size;
  rmSync(dir, { recursive: true, force: true });
  latencies.sort((a, b) => a - b);
  return {
    calls: latencies.length,
    errors,
    elapsedMs,
    callsPerSecond: latencies.length / (elapsedMs / 1000),
    p50Ms: pct(latencies, 50),
    p99Ms: pct(latencies, 99),
    maxMs: latencies.at(-1) ?? 0,
    auditCalls,
    auditOwn,
    auditMismatches,
    cap: o.maxChildren,
    maxPoolLive,
    maxPoolLiveOrStopping,
    maxProcGroups,
    samples,
    spawned,
    groupsAfterClose,
    stoppedEarly,
  };
}

/** One-paragraph summary of a load report. */
export function formatLoadReport(o: LoadOptions, r: LoadReport): string {
  return [
    `load: ${o.sessions} sessions over HTTP, ${o.connections} connections (hot set ${o.hotSet}), pool cap ${r.cap}, ${r.calls} calls in ${(r.elapsedMs / 1000).toFixed(1)} s${r.stoppedEarly ? " (time budget reached)" : ""}`,
    `  throughput ${r.callsPerSecond.toFixed(1)} calls/s, latency p50 ${r.p50Ms.toFixed(1)} ms, p99 ${r.p99Ms.toFixed(1)} ms, max ${r.maxMs.toFixed(1)} ms`,
    `  errors ${r.errors.length}, audit call rows ${r.auditCalls} (own ${r.auditOwn}), per-connection mismatches ${r.auditMismatches.length}`,
    `  children spawned ${r.spawned}; max live: pool ${r.maxPoolLive} (with stopping ${r.maxPoolLiveOrStopping}), /proc groups ${r.maxProcGroups}; ${r.samples} samples; left after close ${r.groupsAfterClose}`,
  ].join("\n");
}

async function main(): Promise<void> {
  // The load generator's SDK clients warn once per call on a long session: count those, print the rest.
  const clientAbortListenerWarnings = countClientAbortWarnings();
  const num = (name: string, dflt: number) => {
    const v = Number(process.env[name] ?? dflt);
    if (!Number.isFinite(v) || v <= 0) throw new Error(`${name} must be a positive number`);
    return v;
  };
  const o: LoadOptions = {
    maxChildren: num("SOAK_MAX_CHILDREN", 8),
    connections: num("SOAK_CONNECTIONS", 64),
    hotSet: num("SOAK_HOT_SET", 8),
    sessions: num("SOAK_SESSIONS", 16),
    calls: Math.min(num("SOAK_CALLS", 6000), 100_000),
    turnLength: num("SOAK_TURN_LENGTH", 2),
    maxMs: Math.min(num("SOAK_MAX_SECONDS", 300), 3600) * 1000,
    sampleEveryMs: 10,
    progress: (l) => process.stdout.write(`${l}\n`),
  };
  process.stdout.write(`soak: ${o.calls} calls max, ${o.maxMs / 1000} s max\n`);
  const r = await runLoad(o);
  process.stdout.write(`${formatLoadReport(o, r)}\n`);
  if (clientAbortListenerWarnings() > 0)
    process.stdout.write(`  (${clientAbortListenerWarnings()} client-side MaxListenersExceededWarning, not printed)\n`);
  const problems = [
    ...r.errors.slice(0, 10),
    ...(r.auditCalls !== r.calls ? [`audit rows ${r.auditCalls} != calls ${r.calls}`] : []),
    ...r.auditMismatches.slice(0, 10),
    ...(r.maxPoolLiveOrStopping > r.cap || r.maxProcGroups > r.cap ? [`cap ${r.cap} exceeded`] : []),
    ...(r.groupsAfterClose ? [`${r.groupsAfterClose} child groups left after close`] : []),
  ];
  if (problems.length) {
    process.stdout.write(`FAILED\n${problems.join("\n")}\n`);
    process.exitCode = 1;
  } else {
    process.stdout.write("OK\n");
  }
}

// Run only when executed (npx tsx bench/soak.ts), not when the load test imports runLoad.
if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) await main();
