// What a warm call's two audit commits cost SQLite, page by page: the real schema (migrations),
// the real repository (SqliteAuditRepo, its group commit and prepared transaction), one file per
// variant, the variants interleaved round by round. Per variant: CPU per call (two sequential
// appends, the call_started and the call row), WAL frames per commit, and the syscalls are left to
// strace (`strace -f -c -e trace=pwrite64,fcntl,fdatasync tsx bench/sqlite-audit.ts`).
//   tsx bench/sqlite-audit.ts [callsPerRound=2000] [rounds=5] [variant,...]
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { AuditEvent } from "../src/audit/event.js";
import type { Db } from "../src/store/sqlite/db.js";
import { openSqliteStore, type SqliteStore } from "../src/store/sqlite/sqlite-store.js";

const positional = process.argv.slice(2);
const calls = Number(positional[0] ?? 2000);
const rounds = Number(positional[1] ?? 5);

/** A variant: what it changes on a freshly migrated file. */
const VARIANTS: Record<string, (db: Db) => void> = {
  schema: () => {},
  "no-autoincrement": (db) => rebuildWithoutAutoincrement(db),
  "no-autoinc,no-by_connection": (db) => {
    rebuildWithoutAutoincrement(db);
    db.exec("DROP INDEX audit_by_connection");
  },
  "no-autoinc,no-by_call": (db) => {
    rebuildWithoutAutoincrement(db);
    db.exec("DROP INDEX audit_by_call");
  },
  "no-autoinc,time index only": (db) => {
    rebuildWithoutAutoincrement(db);
    db.exec("DROP INDEX audit_by_connection; DROP INDEX audit_by_call");
  },
  "no-autoinc,no index": (db) => {
    rebuildWithoutAutoincrement(db);
    db.exec("DROP INDEX audit_by_connection; DROP INDEX audit_by_call; DROP INDEX audit_by_time");
  },
  "schema,autocheckpoint off": (db) => db.pragma("wal_autocheckpoint = 0"),
  "no-autoinc,autocheckpoint off": (db) => {
    rebuildWithoutAutoincrement(db);
    db.pragma("wal_autocheckpoint = 0");
  },
};

function rebuildWithoutAutoincrement(db: Db): void {
  const sql = (db.prepare("SELECT sql FROM sqlite_master WHERE name = 'audit'").pluck().get() as string)
    .replace("AUTOINCREMENT", "")
    .replace("CREATE TABLE audit", "CREATE TABLE audit_new");
  const idx = db
    .prepare("SELECT sql FROM sqlite_master WHERE tbl_name = 'audit' AND type IN ('index', 'trigger')")
    .pluck()
    .all() as string[];
  db.exec(
    `${sql}; INSERT INTO audit_new SELECT * FROM audit; DROP TABLE audit; ALTER TABLE audit_new RENAME TO audit;`,
  );
  for (const s of idx) db.exec(s);
  db.exec("DELETE FROM sqlite_sequence WHERE name = 'audit'");
}

const selected = positional[2] ? positional[2].split(";") : Object.keys(VARIANTS);

function row(i: number, event: "call_started" | "call"): AuditEvent {
  return {
    at: Date.now(),
    event,
    teamId: "T0BENCH",
    channelId: "C0BENCH",
    threadTs: "1700000000.000001",
    callerUserId: "U0ALICE",
    ownerUserId: "U0ALICE",
    connectionId: "conn_AAAAAAAAAAAAAAAA",
    service: "echo",
    tool: "echo",
    argsHash: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    decision: "own",
    durationMs: event === "call" ? 3 : null,
    resultBytes: event === "call" ? 42 : null,
    callId: `call_${i.toString(36).padStart(16, "0")}`,
  };
}

interface Run {
  readonly name: string;
  readonly store: SqliteStore;
  n: number;
  readonly cpu: number[];
  readonly wall: number[];
  frames: number;
}

function open(name: string): Run {
  const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-sqlaudit-"));
  const { store } = openSqliteStore(path.join(dir, "broker.db"));
  VARIANTS[name]!(store.db);
  return { name, store, n: 0, cpu: [], wall: [], frames: 0 };
}

async function pass(r: Run, k: number, wall?: number[]): Promise<number> {
  const w0 = performance.now();
  const t0 = process.cpuUsage();
  for (let i = 0; i < k; i++) {
    const id = r.n++;
    await r.store.audit.append([row(id, "call_started")]);
    await r.store.audit.append([row(id, "call")]);
  }
  const t = process.cpuUsage(t0);
  wall?.push(((performance.now() - w0) * 1000) / k);
  return (t.user + t.system) / k;
}

/** WAL frames one commit appends, read from a WAL emptied first (checkpoint off while counting). */
async function framesPerCommit(r: Run): Promise<number> {
  const db = r.store.db;
  const before = db.pragma("wal_autocheckpoint", { simple: true }) as number;
  db.pragma("wal_checkpoint(TRUNCATE)");
  db.pragma("wal_autocheckpoint = 0");
  await pass(r, 100);
  const [c] = db.pragma("wal_checkpoint(PASSIVE)") as { log: number }[];
  db.pragma(`wal_autocheckpoint = ${before}`);
  return c!.log / 200;
}

const runs = selected.map(open);
for (const r of runs) {
  await pass(r, 300); // warm-up
  r.frames = await framesPerCommit(r);
}
console.log(
  `load average ${os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(" ")}; ${rounds} rounds of ${calls} calls (2 commits each)`,
);
for (let round = 0; round < rounds; round++) {
  // Rotate the order each round so no variant always runs first.
  for (let j = 0; j < runs.length; j++) {
    const r = runs[(j + round) % runs.length]!;
    r.cpu.push(await pass(r, calls, r.wall));
  }
}
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log("variant | CPU µs per call: min / median | wall µs per call: median | WAL frames per commit");
for (const r of runs) {
  console.log(
    `${r.name} | ${Math.min(...r.cpu).toFixed(1)} / ${med(r.cpu).toFixed(1)} | ${med(r.wall).toFixed(1)} | ${r.frames.toFixed(2)}`,
  );
  await r.store.close();
}
console.log(
  `load average after ${os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(" ")}`,
);
