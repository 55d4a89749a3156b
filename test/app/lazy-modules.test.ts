import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServe } from "../console/serve.js";
import { type PgCluster, startPostgres } from "../support/postgres.js";

// `serve` loads the PostgreSQL side (`pg`, src/store/postgres, src/topology/postgres) only when
// SLAUDE_DATABASE_URL selects it, no command module but its own, and not the MCP SDK's 2025 client
// bundle (@modelcontextprotocol/sdk, only for embedding the broker in a host process): measured by a loader preloaded
// into the real process (test/fixtures/record-modules.mjs) that records every module URL it resolves.

const RECORDER = fileURLToPath(new URL("../fixtures/record-modules.mjs", import.meta.url));

const dirs: string[] = [];
let cluster: PgCluster | undefined;

beforeAll(async () => {
  cluster = await startPostgres();
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Starts `serve` with `env` until its start-up block is printed, stops it, and returns what it loaded. */
async function loadedBy(env: Record<string, string>): Promise<string[]> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-lazy-"));
  dirs.push(dir);
  const record = path.join(dir, "modules.txt");
  const s = await startServe(dir, { ...env, NODE_OPTIONS: `--import ${RECORDER}`, RECORD_MODULES_FILE: record });
  try {
    return readFileSync(record, "utf8").split("\n").filter(Boolean);
  } finally {
    await s.stop();
  }
}

const postgresSide = (u: string) =>
  u.includes("/node_modules/pg/") || u.includes("/src/store/postgres/") || u.includes("/src/topology/postgres/");
const sdk2025 = (u: string) => u.includes("/node_modules/@modelcontextprotocol/sdk/");
const otherCommands = (u: string) => /\/src\/cli\/commands\/(?!serve\.|doctor-runtime\.)/.test(u);

describe("modules serve loads", () => {
  it("with the SQLite file: the SQLite store, and neither PostgreSQL's side nor other commands", async () => {
    const urls = await loadedBy({});
    // The recorder saw the start: the SQLite store and the server it runs.
    expect(urls.some((u) => u.includes("/node_modules/better-sqlite3/"))).toBe(true);
    expect(urls.some((u) => u.includes("/src/store/sqlite/sqlite-store."))).toBe(true);
    expect(urls.some((u) => u.includes("/src/cli/commands/serve."))).toBe(true);
    expect(urls.filter(postgresSide)).toEqual([]);
    expect(urls.filter(otherCommands)).toEqual([]);
    expect(urls.filter(sdk2025)).toEqual([]);
    // What it does load of the MCP SDK: the 2026 packages its endpoint and vendor clients use.
    expect(urls.some((u) => u.includes("/node_modules/@modelcontextprotocol/server/"))).toBe(true);
  }, 120_000);

  it("with SLAUDE_DATABASE_URL: PostgreSQL's client, store and replica topology", async () => {
    const urls = await loadedBy({ SLAUDE_DATABASE_URL: await cluster!.createDatabase() });
    expect(urls.some((u) => u.includes("/node_modules/pg/"))).toBe(true);
    expect(urls.some((u) => u.includes("/src/store/postgres/pg-store."))).toBe(true);
    expect(urls.some((u) => u.includes("/src/topology/postgres/postgres-topology."))).toBe(true);
    expect(urls.filter(otherCommands)).toEqual([]);
  }, 120_000);
});
