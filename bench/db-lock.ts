// npm run bench:dblock: /healthz latency while another process holds the SQLite write lock
// (issue 9, item 10). The app runs in this process with the TTL reaper every 50 ms; a second
// process takes BEGIN IMMEDIATE and holds it while several mcp_calls wait for the lock to write
// their call_started rows. Before the async lock wait, every waiting write blocked the event loop
// for up to 5 s and /healthz took seconds; the target is under 100 ms.
// Figures are of this machine at this moment; compare the locked and unlocked rows of one run.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startApp } from "../src/app/app.js";
import { loadConfig } from "../src/config/env.js";
import { parseRegistry } from "../src/config/registry.js";
import { memoryLogger } from "../src/log/logger.js";
import { StaticMembership } from "../src/membership/membership.js";
import { ALICE, fixtureRegistryDoc, mcpCall, THREAD } from "../test/integration/broker-harness.js";
import { holdWriteLock } from "../test/support/db-lock.js";

const HOST_TOKEN = `bench-${randomBytes(8).toString("hex")}`;
const WAITING_CALLS = Number(process.env.BENCH_DBLOCK_CALLS ?? 4);
const LOCK_WAIT_MS = 3_000;

function summary(samples: number[]): string {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(s.length * q))]!.toFixed(1);
  return `n=${s.length} p50 ${at(0.5)} ms  p95 ${at(0.95)} ms  max ${s.at(-1)!.toFixed(1)} ms`;
}

async function probe(url: string): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(`${url}/healthz`);
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`/healthz answered ${res.status}`);
  return performance.now() - t0;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-bench-dblock-"));
  const config = loadConfig({
    NODE_ENV: "test",
    SLAUDE_DATA_DIR: dir,
    PORT: "0",
    SLAUDE_HOST_TOKENS: HOST_TOKEN,
    SLAUDE_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
    SLAUDE_DB_LOCK_WAIT_MS: String(LOCK_WAIT_MS),
    PATH: process.env.PATH ?? "/usr/bin:/bin",
  });
  const app = await startApp({
    config,
    log: memoryLogger("warn"),
    reapIntervalMs: 50,
    membership: new StaticMembership().add(THREAD.teamId, THREAD.channelId, ALICE),
    registry: parseRegistry(fixtureRegistryDoc(), "bench"),
  });
  const client = new Client({ name: "bench-host", version: "1" });
  try {
    await app.lifecycle.create({
      teamId: THREAD.teamId,
      ownerUserId: ALICE,
      service: "vendor",
      scope: "thread",
      channelId: THREAD.channelId,
      threadTs: THREAD.threadTs,
      credential: { kind: "fields", fields: { token: "bench-token", user: ALICE } },
      createdBy: ALICE,
    });
    const turn = await fetch(`${app.url}/v1/turns`, {
      method: "POST",
      headers: { authorization: `Bearer ${HOST_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({
        team_id: THREAD.teamId,
        channel_id: THREAD.channelId,
        thread_ts: THREAD.threadTs,
        user_id: ALICE,
      }),
    });
    if (turn.status !== 204) throw new Error(`/v1/turns answered ${turn.status}`);
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), {
        requestInit: {
          headers: {
            Authorization: `Bearer ${HOST_TOKEN}`,
            "X-Slaude-Thread": `${THREAD.teamId}/${THREAD.channelId}/${THREAD.threadTs}`,
          },
        },
      }),
    );
    await mcpCall(client, { tool: "echo", args: { text: "warm" }, on_behalf_of: ALICE });

    const unlocked: number[] = [];
    const until = performance.now() + 2_000;
    while (performance.now() < until) unlocked.push(await probe(app.url));

    const lock = await holdWriteLock(config.dbPath);
    const calls = Array.from({ length: WAITING_CALLS }, (_, i) =>
      mcpCall(client, { tool: "write_item", args: { id: `b${i}`, value: "v" }, on_behalf_of: ALICE }),
    );
    let settled = 0;
    for (const c of calls)
      void c.then(
        () => settled++,
        () => settled++,
      );
    const locked: number[] = [];
    while (settled < calls.length) locked.push(await probe(app.url));
    await lock.release();
    const codes = (await Promise.all(calls)).map((r) => r.structured.code ?? r.structured.status);

    console.log(`/healthz, no lock held:                    ${summary(unlocked)}`);
    console.log(
      `/healthz, another process holds the lock:  ${summary(locked)}  (${WAITING_CALLS} mcp_calls and the reaper waiting; calls ended: ${[...new Set(codes)].join(", ")})`,
    );
  } finally {
    await client.close().catch(() => {});
    await app.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
