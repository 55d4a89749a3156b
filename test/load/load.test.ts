import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { describe, expect, it } from "vitest";
import { childProcessGroups, formatLoadReport, type LoadOptions, runLoad } from "../../bench/soak.js";
import { startApp } from "../../src/app/app.js";
import { loadConfig } from "../../src/config/env.js";
import { parseRegistry } from "../../src/config/registry.js";
import { newId } from "../../src/domain/ids.js";
import { memoryLogger } from "../../src/log/logger.js";
import { StaticMembership } from "../../src/membership/membership.js";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { bindingOf } from "../../src/vault/binding.js";
import { KeyRing } from "../../src/vault/keyring.js";
import { Vault } from "../../src/vault/vault.js";
import { fixtureRegistryDoc } from "../integration/broker-harness.js";
import { fullGc } from "../support/gc.js";

/** process.memoryUsage() after a full collection: deltas are what is retained, not garbage not yet collected. */
function measure(): NodeJS.MemoryUsage {
  fullGc();
  return process.memoryUsage();
}

// The short load run (bench/soak.ts is the long one): the real app over HTTP with a pool cap far
// below the number of connections. No timing assertions: throughput and latency are printed only.

describe("load: many connections, few vendor slots", () => {
  it("every call succeeds, is audited once, and live children never exceed the cap", async () => {
    const o: LoadOptions = {
      maxChildren: 4,
      // Four times the cap. Every connection costs a child start (about 1 s of CPU here, several
      // seconds on a busy two-core machine), which is what bounds this short run.
      connections: 16,
      // The in-use set equals the cap and moves window by window over all 16 connections, so each is
      // spawned and most are evicted; eight sessions share four children, several calls on one at a time.
      hotSet: 4,
      sessions: 8,
      calls: 300,
      turnLength: 1,
      // A budget, not an assertion: on a starved machine (spawns take seconds) the run stops starting
      // calls and every invariant is still checked on the calls that ran.
      maxMs: 22_000,
      sampleEveryMs: 10,
    };
    const r = await runLoad(o);
    console.log(formatLoadReport(o, r));
    if (r.stoppedEarly)
      console.log(`  NOTE: time budget reached after ${r.calls} of ${o.calls} calls; invariants checked on those`);
    expect(r.calls).toBeGreaterThan(0);
    expect(r.errors).toEqual([]);
    expect(r.auditCalls).toBe(r.calls);
    expect(r.auditOwn).toBe(r.calls);
    expect(r.auditMismatches).toEqual([]);
    if (!r.stoppedEarly) {
      expect(r.calls).toBe(o.calls);
      // Every connection was used, so the cap was really under pressure.
      expect(r.spawned).toBeGreaterThanOrEqual(o.connections);
    }
    expect(r.samples).toBeGreaterThan(100);
    expect(r.maxPoolLiveOrStopping).toBeLessThanOrEqual(o.maxChildren);
    expect(r.maxProcGroups).toBeLessThanOrEqual(o.maxChildren);
    // The sampler saw children at all (it is not vacuously zero).
    expect(r.maxProcGroups).toBeGreaterThan(0);
    expect(r.groupsAfterClose).toBe(0);
  });
});

describe("memory with 10,000 stored connections", () => {
  it("stays bounded while they are stored, loaded and listed", async () => {
    const N = 10_000;
    const USERS = 1_000;
    const PER_THREAD = 20;
    const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-mem-"));
    const hostToken = `host-${randomBytes(12).toString("hex")}`;
    const users = Array.from({ length: USERS }, (_, i) => `UMEM${String(i).padStart(5, "0")}`);
    const keyB64 = randomBytes(32).toString("base64");
    const registry = parseRegistry(fixtureRegistryDoc(), "mem-registry");
    const app = await startApp({
      config: loadConfig({
        NODE_ENV: "test",
        SLAUDE_DATA_DIR: dir,
        PORT: "0",
        SLAUDE_HOST_TOKENS: hostToken,
        SLAUDE_ENCRYPTION_KEY: keyB64,
        PATH: process.env.PATH ?? "/usr/bin:/bin",
      }),
      log: memoryLogger("warn"),
      membership: new StaticMembership().add("T1", "C1", ...users),
      registry,
    });
    const threadOf = (t: number) => `1700000200.${String(t).padStart(6, "0")}`;
    const clients: Client[] = [];
    try {
      const session = async (t: number) => {
        const transport = new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), {
          requestInit: { headers: { Authorization: `Bearer ${hostToken}`, "X-Slaude-Thread": `T1/C1/${threadOf(t)}` } },
        });
        const client = new Client({ name: "mem-host", version: "1" });
        await client.connect(transport);
        clients.push(client);
        return client;
      };
      const turn = async (t: number, user: string) => {
        const r = await fetch(`${app.url}/v1/turns`, {
          method: "POST",
          headers: { authorization: `Bearer ${hostToken}`, "content-type": "application/json" },
          body: JSON.stringify({ team_id: "T1", channel_id: "C1", thread_ts: threadOf(t), user_id: user }),
        });
        expect(r.status).toBe(204);
      };
      const list = async (client: Client) => {
        const r = await client.callTool({ name: "connections_list", arguments: {} });
        expect(r.isError).toBeFalsy();
        return (r.structuredContent as { connections: { id: string; mine: boolean }[] }).connections;
      };

      // Warm every code path once so the baseline includes compiled code, not just an idle heap.
      const warm = await session(0);
      await turn(0, users[0]!);
      expect(await list(warm)).toEqual([]);
      const before = measure();

      // Thread t holds connections [t*20, t*20+20), owned by 20 distinct users; each user owns 10.
      // Bulk load: rows sealed with the app's key and bound to their ids exactly as lifecycle.create
      // does, written through store.connections.create in transactions of 500 (10k separate commits
      // take ~10 s here; the question is what holding and listing them costs).
      if (!(app.store instanceof SqliteStore)) throw new Error("the memory test expects the SQLite store");
      const db = app.store.db;
      const vault = new Vault(KeyRing.fromBase64(keyB64));
      const ttlMs = registry.get("vendor")!.ttlMs;
      const t0 = performance.now();
      const now = Date.now();
      for (let start = 0; start < N; start += 500) {
        const created: Promise<unknown>[] = [];
        db.transaction(() => {
          for (let i = start; i < Math.min(N, start + 500); i++) {
            const owner = users[i % USERS]!;
            const draft = {
              id: newId("conn"),
              teamId: "T1",
              ownerUserId: owner,
              service: "vendor",
              scope: "thread" as const,
              channelId: "C1",
              threadTs: threadOf(Math.floor(i / PER_THREAD)),
              label: null,
              createdBy: owner,
              createdAt: now,
              expiresAt: now + ttlMs,
            };
            const sealed = vault.sealCredential(
              { kind: "fields", fields: { token: `mem-${i}-${randomBytes(8).toString("hex")}`, user: owner } },
              bindingOf(draft),
            );
            created.push(
              app.store.connections.create({ ...draft, sealed }, [
                {
                  at: now,
                  event: "connection_created",
                  teamId: "T1",
                  channelId: "C1",
                  threadTs: draft.threadTs,
                  ownerUserId: owner,
                  connectionId: draft.id,
                  service: "vendor",
                  decision: "thread",
                  actor: owner,
                },
              ]),
            );
          }
        })();
        await Promise.all(created);
        // Let timers and sockets run between batches, as a server between requests would.
        await new Promise((r) => setImmediate(r));
      }
      const insertMs = performance.now() - t0;
      const afterInsert = measure();

      const t1 = performance.now();
      const all = await app.store.connections.list({ teamId: "T1", statuses: ["active"] });
      const storeListMs = performance.now() - t1;
      expect(all).toHaveLength(N);

      // connections_list reads every live row of the team on each call: list from 20 threads.
      const listMs: number[] = [];
      for (let t = 0; t < 20; t++) {
        const client = t === 0 ? warm : await session(t);
        const user = users[(t * PER_THREAD) % USERS]!;
        await turn(t, user);
        const ts = performance.now();
        const rows = await list(client);
        listMs.push(performance.now() - ts);
        // The caller's own 10 connections (one per thread it is in), plus the other 19 of this thread.
        expect(rows.filter((r) => r.mine)).toHaveLength(N / USERS);
        expect(rows.filter((r) => !r.mine)).toHaveLength(PER_THREAD - 1);
      }
      const after = measure();
      expect(all).toHaveLength(N);
      listMs.sort((a, b) => a - b);
      const mb = (b: number) => (b / (1 << 20)).toFixed(1);
      const line = (label: string, m: NodeJS.MemoryUsage) =>
        `  ${label.padEnd(26)} rss ${mb(m.rss).padStart(6)} MB (Δ ${mb(m.rss - before.rss).padStart(5)})   heap used ${mb(m.heapUsed).padStart(6)} MB (Δ ${mb(m.heapUsed - before.heapUsed).padStart(5)})`;
      const rssDelta = after.rss - before.rss;
      const heapDelta = after.heapUsed - before.heapUsed;
      console.log(
        [
          `memory with ${N} stored connections (${USERS} owners, ${N / PER_THREAD} threads), after a full GC each time`,
          `  bulk insert of ${N} sealed connections (transactions of 500): ${(insertMs / 1000).toFixed(1)} s`,
          `  store list of all ${N}: ${storeListMs.toFixed(0)} ms; connections_list over MCP (reads all ${N} rows per call): median ${listMs[10]!.toFixed(0)} ms, max ${listMs.at(-1)!.toFixed(0)} ms`,
          line("started, warm", before),
          line(`${N} stored`, afterInsert),
          line(`all ${N} loaded + 20 lists`, after),
        ].join("\n"),
      );
      // Generous: fails only on a pathological leak (e.g. every decrypted credential or row kept forever).
      expect(rssDelta).toBeLessThan(500 * (1 << 20));
      expect(heapDelta).toBeLessThan(500 * (1 << 20));
      expect(app.broker.pool.stats().spawned).toBe(0);
      expect(await app.store.audit.count({ event: "connection_created" })).toBe(N);

      // The bulk-loaded rows are real: one of them opens with the app's vault and runs its vendor.
      await turn(0, users[0]!);
      const call = await warm.callTool({
        name: "mcp_call",
        arguments: { service: "vendor", tool: "echo", args: { text: "bulk-row" }, on_behalf_of: users[0]! },
      });
      expect(call.isError).toBeFalsy();
      expect((call.structuredContent as { ranAs?: string }).ranAs).toBe("own");
    } finally {
      for (const c of clients) await c.close().catch(() => {});
      await app.close();
      rmSync(dir, { recursive: true, force: true });
    }
    expect(childProcessGroups().size).toBe(0);
  });
});
