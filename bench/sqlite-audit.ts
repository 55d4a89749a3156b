// What a warm call's two audit commits cost SQLite, page by page: the real schema (migrations),
// the real repository (SqliteAuditRepo, its group commit and prepared transaction), one file per
// variant, the variants interleaved round by round. Per variant: CPU per call (two sequential
// appends, the call_started and the call row), WAL frames per commit, and the syscalls are left to
// strace (`strace -f -c -e trace=pwrite64,fcntl,fdatasync tsx bench/sqlite-audit.ts`).
// `--seed N` fills each file's audit table with N rows first (ids of the variant's kind), so the
// indexes are as large as a deployment's: random call ids then land on leaves outside SQLite's cache.
//   tsx bench/sqlite-audit.ts [callsPerRound=2000] [rounds=5] [variant;...] [--seed N]
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { AuditEvent } from "../src/audit/event.js";
import { newCallId, randomId } from "../src/domain/ids.js";
import type { Db } from "../src/store/sqlite/db.js";
import { openSqliteStore, type SqliteStore } from "../src/store/sqlite/sqlite-store.js";

const argv = process.argv.slice(2);
const seedAt = argv.indexOf("--seed");
const seed = seedAt >= 0 ? Number(argv.splice(seedAt, 2)[1]) : 0;
const positional = argv;
const calls = Number(positional[0] ?? 2000);
const rounds = Number(positional[1] ?? 5);

/** A variant: what it changes on a freshly migrated file. */
const VARIANTS: Record<string, (store: SqliteStore) => void> = {
  "before 0009 (AUTOINCREMENT)": (store) => rebuildWithAutoincrement(store.db),
  "0009 (the schema)": () => {},
  "0009, no audit_by_connection": (store) => store.db.exec("DROP INDEX audit_by_connection"),
  "0009, no audit_by_call": (store) => store.db.exec("DROP INDEX audit_by_call"),
  "0009, time index only": (store) => store.db.exec("DROP INDEX audit_by_connection; DROP INDEX audit_by_call"),
  "0009, no index": (store) =>
    store.db.exec("DROP INDEX audit_by_connection; DROP INDEX audit_by_call; DROP INDEX audit_by_time"),
  // No checkpoint in any commit: the WAL only grows (what a checkpoint job that falls behind would leave).
  "0009, autocheckpoint off": (store) => store.db.pragma("wal_autocheckpoint = 0"),
  // The checkpoint at the commit that passes 1,000 pages, timed apart: what a call paid for it.
  "0009, checkpoints timed apart": (store) => store.db.pragma("wal_autocheckpoint = 0"),
  // Call ids as the broker made them: before 4 December at random, since then time first (newCallId).
  "0009, random call ids": () => {},
  "0009, time-ordered call ids": () => {},
};

/** How a variant's call ids are made: in sequence (base 36, the bench's first form), at random, or time first. */
type IdKind = "sequential" | "random" | "time-ordered";
const idKind = (variant: string): IdKind =>
  variant.includes("random call ids") ? "random" : variant.includes("time-ordered") ? "time-ordered" : "sequential";
const callIdOf = (kind: IdKind, i: number): string =>
  kind === "random"
    ? `call_${randomId()}`
    : kind === "time-ordered"
      ? newCallId()
      : `call_${i.toString(36).padStart(16, "0")}`;

/** The audit table as migrations 0001 and 0003 made it, with AUTOINCREMENT. */
function rebuildWithAutoincrement(db: Db): void {
  const sql = (db.prepare("SELECT sql FROM sqlite_master WHERE name = 'audit'").pluck().get() as string)
    .replace("seq               INTEGER PRIMARY KEY", "seq INTEGER PRIMARY KEY AUTOINCREMENT")
    .replace(/^CREATE TABLE "?audit"?/, "CREATE TABLE audit_new");
  if (!sql.includes("AUTOINCREMENT") || !sql.includes("audit_new"))
    throw new Error("the audit table's definition changed: update this bench");
  const idx = db
    .prepare("SELECT sql FROM sqlite_master WHERE tbl_name = 'audit' AND type IN ('index', 'trigger')")
    .pluck()
    .all() as string[];
  db.exec(
    `${sql}; INSERT INTO audit_new SELECT * FROM audit; DROP TABLE audit; ALTER TABLE audit_new RENAME TO audit;`,
  );
  for (const x of idx) db.exec(x);
}

const selected = positional[2] ? positional[2].split(";") : Object.keys(VARIANTS);

function row(event: "call_started" | "call", callId: string): AuditEvent {
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
    callId,
  };
}

interface Run {
  readonly name: string;
  readonly ids: IdKind;
  readonly store: SqliteStore;
  n: number;
  readonly cpu: number[];
  readonly wall: number[];
  /** Each round's slowest call (µs): where a checkpoint in the commit shows. */
  readonly worst: number[];
  frames: number;
  /** Checkpoints run between calls, every 100 calls (about the 1,000 pages of SQLite's default), and timed apart. */
  readonly apart: boolean;
  /** Each such checkpoint: CPU and wall µs. */
  readonly ckpt: { cpu: number; wall: number }[];
}

function open(name: string): Run {
  const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-sqlaudit-"));
  const { store } = openSqliteStore(path.join(dir, "broker.db"));
  VARIANTS[name]!(store);
  const ids = idKind(name);
  if (seed > 0) seedRows(store.db, ids, seed);
  return {
    name,
    ids,
    store,
    n: 0,
    cpu: [],
    wall: [],
    worst: [],
    frames: 0,
    apart: name.endsWith("timed apart"),
    ckpt: [],
  };
}

async function pass(r: Run, k: number, wall?: number[]): Promise<number> {
  let w0 = performance.now();
  const t0 = { ...process.cpuUsage() };
  let worst = 0;
  for (let i = 0; i < k; i++) {
    const id = r.n++;
    const callId = callIdOf(r.ids, id);
    const c0 = performance.now();
    await r.store.audit.append([row("call_started", callId)]);
    await r.store.audit.append([row("call", callId)]);
    worst = Math.max(worst, performance.now() - c0);
    if (r.apart && wall && r.n % 100 === 0) {
      const w = performance.now();
      const c = process.cpuUsage();
      r.store.db.pragma("wal_checkpoint(PASSIVE)");
      const d = process.cpuUsage(c);
      r.ckpt.push({ cpu: d.user + d.system, wall: (performance.now() - w) * 1000 });
      t0.user += d.user;
      t0.system += d.system;
      w0 += performance.now() - w;
    }
  }
  const t = process.cpuUsage(t0);
  if (wall) {
    wall.push(((performance.now() - w0) * 1000) / k);
    r.worst.push(worst * 1000);
  }
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

/** `n` rows (two per call, as calls write them) with call ids of `kind`, in one transaction, checkpointed. */
function seedRows(db: Db, kind: IdKind, n: number): void {
  const insert = db.prepare(
    `INSERT INTO audit (at, event, team_id, channel_id, thread_ts, caller_user_id, owner_user_id, connection_id,
       service, tool, args_hash, decision, duration_ms, result_bytes, call_id)
     VALUES (?, ?, 'T0BENCH', 'C0BENCH', '1700000000.000001', 'U0ALICE', 'U0ALICE', ?, 'echo', 'echo', ?, 'own', ?, ?, ?)`,
  );
  const at = Date.now() - n;
  db.transaction(() => {
    for (let i = 0; i < n; i += 2) {
      // Time-ordered seeds are made for their own (earlier) times: the table then holds ids older than the measured ones.
      const callId = kind === "time-ordered" ? newCallId(at + i) : callIdOf(kind, -1 - i);
      const conn = `conn_${(i % 50).toString().padStart(16, "0")}`;
      insert.run(at + i, "call_started", conn, "sha256:00", null, null, callId);
      insert.run(at + i, "call", conn, "sha256:00", 3, 42, callId);
    }
  })();
  db.pragma("wal_checkpoint(TRUNCATE)");
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
    .join(" ")}; ${rounds} rounds of ${calls} calls (2 commits each)${seed ? `; ${seed} rows seeded per file` : ""}`,
);
for (let round = 0; round < rounds; round++) {
  // Rotate the order each round so no variant always runs first.
  for (let j = 0; j < runs.length; j++) {
    const r = runs[(j + round) % runs.length]!;
    r.cpu.push(await pass(r, calls, r.wall));
  }
}
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(
  "variant | CPU µs per call: min / median | wall µs per call: median | slowest call µs: median of rounds | WAL frames per commit",
);
for (const r of runs) {
  console.log(
    `${r.name} | ${Math.min(...r.cpu).toFixed(1)} / ${med(r.cpu).toFixed(1)} | ${med(r.wall).toFixed(1)} | ${med(r.worst).toFixed(0)} | ${r.frames.toFixed(2)}`,
  );
  if (r.ckpt.length) {
    const cpu = r.ckpt.map((x) => x.cpu);
    const wall = r.ckpt.map((x) => x.wall);
    console.log(
      `  its ${r.ckpt.length} checkpoints (one per 100 calls, between calls): CPU µs median ${med(cpu).toFixed(0)}, wall µs median ${med(wall).toFixed(0)}, max ${Math.max(...wall).toFixed(0)}`,
    );
  }
  await r.store.close();
}
console.log(
  `load average after ${os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(" ")}`,
);
