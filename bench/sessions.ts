// MCP session memory (issue 9 item 15): opens N sessions over real HTTP against the real app and
// reports how many the broker holds and the V8 heap after GC, then expires them all with the idle
// sweep (a manual clock moved past SLAUDE_MCP_SESSION_IDLE_SECONDS) and measures again.
//
//   node --expose-gc --import tsx bench/sessions.ts                 2000 sessions, default cap 1000
//   BENCH_SESSIONS=5000 BENCH_MAX_SESSIONS=100000 node --expose-gc --import tsx bench/sessions.ts
//
// Every session is opened in the same thread, so only the session table grows (not the turn map).
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { startApp } from "../src/app/app.js";
import { ManualClock } from "../src/clock/clock.js";
import { loadConfig } from "../src/config/env.js";
import { memoryLogger } from "../src/log/logger.js";

const n = Math.min(Number(process.env.BENCH_SESSIONS ?? 2000), 100_000);
const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-bench-sessions-"));
const token = `bench-${randomBytes(12).toString("hex")}`;
const clock = new ManualClock(Date.now());
const config = loadConfig({
  NODE_ENV: "test",
  SLAUDE_DATA_DIR: dir,
  PORT: "0",
  SLAUDE_HOST_TOKENS: token,
  SLAUDE_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
  PATH: process.env.PATH ?? "/usr/bin:/bin",
  ...(process.env.BENCH_MAX_SESSIONS ? { SLAUDE_MCP_MAX_SESSIONS: process.env.BENCH_MAX_SESSIONS } : {}),
});
const app = await startApp({ config, log: memoryLogger("error"), clock });
const gc = (globalThis as { gc?: () => void }).gc;
const heapMb = (): number => {
  gc?.();
  gc?.();
  return Math.round(process.memoryUsage().heapUsed / 1_048_576);
};
const init = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "bench", version: "1" } },
});
const headers = {
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
  authorization: `Bearer ${token}`,
  "x-slaude-thread": "T1/C1/1700000000.000001",
};

const before = heapMb();
let refused = 0;
for (let i = 0; i < n; i++) {
  const r = await fetch(`${app.url}/mcp`, { method: "POST", body: init, headers });
  await r.text();
  if (r.status !== 200) refused++;
}
const opened = heapMb();
console.log(
  JSON.stringify({
    initializes: n,
    refused,
    held: app.mcp.sessionCount,
    cap: config.mcpSessions.maxSessions,
    heapBeforeMb: before,
    heapAfterMb: opened,
    growthMb: opened - before,
    gcExposed: gc !== undefined,
  }),
);
clock.advance(config.mcpSessions.idleMs + 1);
const swept = app.mcp.sweepIdle();
await new Promise((r) => setTimeout(r, 500)); // closing is asynchronous
console.log(JSON.stringify({ swept, held: app.mcp.sessionCount, heapAfterSweepMb: heapMb() }));
await app.close();
rmSync(dir, { recursive: true, force: true });
