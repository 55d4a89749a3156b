import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterEach, describe, expect, it, vi } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { parseRegistry } from "../../src/config/registry.js";
import { memoryLogger } from "../../src/log/logger.js";
import { StaticMembership } from "../../src/membership/membership.js";
import { ALICE, aliceThreadConnection, fixtureRegistryDoc, mcpCall, THREAD } from "../integration/broker-harness.js";
import { testAppConfig } from "../support/app-config.js";
import { type HeldLock, holdWriteLock } from "../support/db-lock.js";

// Issue 9, item 10: SQLite busy waits must not block the event loop. With another process holding
// the database's write lock, /healthz took 10 s because every write (the TTL reaper, a call's
// audit row) sat in SQLite's blocking busy wait. Now writes wait with async retries: /healthz
// answers at once while writers wait. The real app over HTTP, a real second process holding the lock.

const TOKEN = `host-${randomBytes(8).toString("hex")}`;
let dir: string | undefined;
let app: RunningApp | undefined;
let lock: HeldLock | undefined;
let client: Client | undefined;
afterEach(async () => {
  await lock?.release();
  await client?.close().catch(() => {});
  await app?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  lock = app = client = dir = undefined;
});

async function healthzMs(url: string): Promise<{ ms: number; status: number }> {
  const t0 = performance.now();
  const res = await fetch(`${url}/healthz`);
  await res.arrayBuffer();
  return { ms: performance.now() - t0, status: res.status };
}

describe("the event loop while another process holds the write lock", () => {
  it("answers /healthz promptly while the reaper and an mcp_call wait for the lock; the call is then refused", async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "slaude-dblock-"));
    const log = memoryLogger("debug");
    const config = testAppConfig(dir, TOKEN, { SLAUDE_DB_LOCK_WAIT_MS: "6000" });
    // The TTL reaper writes every 50 ms: each run waits for the lock too.
    app = await startApp({
      config,
      log,
      reapIntervalMs: 50,
      membership: new StaticMembership().add(THREAD.teamId, THREAD.channelId, ALICE),
      registry: parseRegistry(fixtureRegistryDoc(), "x"),
    });
    const a = app;
    await aliceThreadConnection(a.lifecycle);
    const turn = await fetch(`${a.url}/v1/turns`, {
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
    client = new Client({ name: "test-host", version: "1" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${a.url}/mcp`), {
        requestInit: {
          headers: {
            Authorization: `Bearer ${TOKEN}`,
            "X-Slaude-Thread": `${THREAD.teamId}/${THREAD.channelId}/${THREAD.threadTs}`,
          },
        },
      }),
    );
    const base: number[] = [];
    for (let i = 0; i < 20; i++) base.push((await healthzMs(a.url)).ms);
    base.sort((x, y) => x - y);

    lock = await holdWriteLock(config.dbPath);
    const call = mcpCall(client, { tool: "write_item", args: { id: "x", value: "y" }, on_behalf_of: ALICE });
    let settled = false;
    void call.then(
      () => (settled = true),
      () => (settled = true),
    );
    // Probe /healthz for as long as the call waits for the lock (its wait is 6 s).
    const samples: number[] = [];
    while (!settled) {
      const h = await healthzMs(a.url);
      expect(h.status).toBe(200);
      samples.push(h.ms);
    }
    const worst = Math.max(...samples);
    const sorted = [...samples].sort((x, y) => x - y);
    const pct = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]!.toFixed(1);
    console.log(
      `healthz under a held write lock: ${samples.length} probes, p50 ${pct(0.5)} ms, p95 ${pct(0.95)} ms, max ${worst.toFixed(1)} ms; unlocked baseline p50 ${base[Math.floor(base.length / 2)]!.toFixed(1)} ms, max ${Math.max(...base).toFixed(1)} ms`,
    );
    // Issue target 100 ms (a figure for the bench: npm run bench:dblock). What this test holds is the
    // mechanism: a wait that blocked the event loop would stall a probe for the whole 6 s lock wait (it
    // did, 5-10 s, before), so no probe may take half of it; a loaded CI machine stays well inside that.
    expect(worst).toBeLessThan(3_000);
    expect(samples.length).toBeGreaterThan(5);
    const refused = await call;
    expect(refused.structured.code).toBe("audit_unavailable");
    // The reaper ran (and waited) meanwhile: the loop was busy with real contention, not idle.
    await vi.waitFor(
      () => expect(log.lines.some((l) => l.includes("ttl reaper failed") && l.includes("locked"))).toBe(true),
      { timeout: 15_000, interval: 50 },
    );
    expect(config.dbLockWaitMs).toBe(6000);
  });
});
