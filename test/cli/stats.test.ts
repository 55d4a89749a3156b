import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { AuditEvent } from "../../src/audit/event.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { newKeyB64, TempDirs, writeRegistryFile } from "../support/foundation.js";
import { runBin, runInProcess } from "./run.js";

// `slaude-connect stats` as an operator runs it: the real CLI process against a real SQLite file
// holding planted audit rows, for a fixed hour (--until), so every figure is known in advance.

const tmp = new TempDirs();
afterAll(() => tmp.cleanup());

const at = (hhmmss: string) => Date.parse(`2026-12-01T${hhmmss}Z`);
const ROWS: AuditEvent[] = [
  { at: at("09:59:59"), event: "call", teamId: "T1", decision: "own", durationMs: 1 },
  { at: at("10:05:10"), event: "call_started", teamId: "T1", decision: "own", callId: "call_1" },
  { at: at("10:05:10"), event: "call", teamId: "T1", decision: "own", durationMs: 100, callId: "call_1" },
  { at: at("10:05:40"), event: "call", teamId: "T1", decision: "grant", durationMs: 300 },
  {
    at: at("10:05:50"),
    event: "call_denied",
    teamId: "T1",
    decision: "needs_connect",
    errorCode: "needs_connect",
    durationMs: 2,
  },
  { at: at("10:30:00"), event: "call", teamId: "T1", decision: "approval_once", durationMs: 5000 },
  { at: at("10:30:20"), event: "call", teamId: "T1", decision: "own", errorCode: "vendor_error", durationMs: 50 },
  { at: at("10:31:00"), event: "approval_decided", teamId: "T1", decision: "allowed_once" },
  { at: at("10:40:00"), event: "call", teamId: "T2", decision: "own", durationMs: 70 },
  { at: at("11:00:00"), event: "call", teamId: "T1", decision: "own", durationMs: 1 },
];

async function plantedStore(): Promise<NodeJS.ProcessEnv> {
  const dir = tmp.make("slaude-stats-");
  const dataDir = path.join(dir, "data");
  const env = {
    SLAUDE_DATA_DIR: dataDir,
    SLAUDE_REGISTRY_PATH: writeRegistryFile(dir),
    SLAUDE_ENCRYPTION_KEY: newKeyB64(),
  };
  const { store } = openSqliteStore(path.join(dataDir, "slaude.db"));
  await store.audit.append(ROWS);
  await store.close();
  return env;
}

describe("slaude-connect stats", () => {
  it("prints the hour's calls by outcome, latency p50/p95 and the busy minutes", async () => {
    const env = await plantedStore();
    const one = await runBin(["stats", "--until", "2026-12-01T10:59:30Z", "--team", "T1"], env);
    expect(one.code, one.stderr).toBe(0);
    expect(one.stdout).toBe(
      [
        "Calls from 2026-12-01T10:00:00Z to 2026-12-01T11:00:00Z (60 minutes), team T1: 5",
        "  own 1, borrowed 2, refused 1, failed 1",
        "Latency: p50 100 ms, p95 5000 ms (4 calls)",
        "",
        "MINUTE  OWN  BORROWED  REFUSED  FAILED  P50_MS  P95_MS",
        "10:05   1    1         1        0       100     300",
        "10:30   0    1         0        1       50      5000",
        "",
      ].join("\n"),
    );

    const all = await runBin(["stats", "--until", "2026-12-01T10:59:30Z", "--json"], env);
    expect(all.code, all.stderr).toBe(0);
    const s = JSON.parse(all.stdout) as { calls: number; totals: unknown; latency: unknown; minutes: unknown[] };
    expect(s).toMatchObject({
      calls: 6,
      totals: { own: 2, borrowed: 2, refused: 1, failed: 1 },
      latency: { p50Ms: 100, p95Ms: 5000, timed: 5 },
    });
    expect(s.minutes).toHaveLength(60);

    const short = await runBin(["stats", "--until", "2026-12-01T10:31:00Z", "--minutes", "2", "--team", "T1"], env);
    expect(short.stdout.split("\n").slice(0, 3)).toEqual([
      "Calls from 2026-12-01T10:30:00Z to 2026-12-01T10:32:00Z (2 minutes), team T1: 2",
      "  own 0, borrowed 1, refused 0, failed 1",
      "Latency: p50 50 ms, p95 5000 ms (2 calls)",
    ]);
  });

  // The usage checks run in-process: the same runCli, without a process start per case.
  it("says so when no call was made, and refuses what it does not understand", async () => {
    const env = await plantedStore();
    const quiet = await runBin(["stats", "--until", "2026-11-30T10:00:00Z"], env);
    expect(quiet.code, quiet.stderr).toBe(0);
    expect(quiet.stdout).toContain(
      "every team: 0\n  own 0, borrowed 0, refused 0, failed 0\nLatency: no call was let through\n\n(none)",
    );
    for (const bad of [
      ["--minutes", "0"],
      ["--minutes", "61"],
      ["--minutes", "1.5"],
      ["--until", "8h"],
      ["extra"],
      ["--since", "1h"],
    ]) {
      const r = await runInProcess(["stats", ...bad], env);
      expect(r.code, bad.join(" ")).toBe(2);
      expect(r.stdout).toBe("");
    }
  });
});
