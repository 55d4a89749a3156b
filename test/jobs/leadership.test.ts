// Leader-only periodic jobs on a real PostgreSQL: replicas contending for one job run it once per
// tick between them, and when the leader goes (its store closed, its process killed) another takes
// over at its next tick. The memory adapter (SQLite, one process) always leads.
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/clock/clock.js";
import { Leadership, MemoryLeaderLocks } from "../../src/jobs/leadership.js";
import { PeriodicJob } from "../../src/jobs/periodic-job.js";
import { memoryLogger } from "../../src/log/logger.js";
import { openPostgresStore, type PostgresStore } from "../../src/store/postgres/pg-store.js";
import { PostgresTopology } from "../../src/topology/postgres/postgres-topology.js";
import { type PgCluster, startPostgres } from "../support/postgres.js";

const LEADER_FIXTURE = fileURLToPath(new URL("../fixtures/pg-leader.ts", import.meta.url));

let cluster: PgCluster;
let databaseUrl: string;
const stores: PostgresStore[] = [];
const children: ChildProcess[] = [];
beforeAll(async () => {
  cluster = await startPostgres();
  databaseUrl = await cluster.createDatabase();
});
afterEach(async () => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  for (const s of stores.splice(0)) await s.close();
});
afterAll(async () => {
  await cluster?.stop();
});

/** One replica: its own store on the shared database, its leadership, and a counted leader-only job. */
async function replica(url: string, name = "ttl reaper") {
  const { store } = await openPostgresStore({ url });
  stores.push(store);
  const log = memoryLogger();
  const leadership = new Leadership({ locks: new PostgresTopology(store.db).locks, log });
  let runs = 0;
  const job = new PeriodicJob({
    name,
    intervalMs: 30_000,
    clock: new ManualClock(),
    log,
    leadership,
    run: async () => void runs++,
  });
  return { store, log, leadership, job, runs: () => runs };
}

/** Starts test/fixtures/pg-leader.ts and resolves with it once it says whether it leads. */
async function leaderProcess(url: string, job: string): Promise<{ child: ChildProcess; leading: boolean }> {
  const child = spawn(process.execPath, ["--import", "tsx", LEADER_FIXTURE, url, job], {
    stdio: ["pipe", "pipe", "pipe"],
    shell: false,
  });
  children.push(child);
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  const line = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout!.setEncoding("utf8").on("data", (d: string) => {
      out += d;
      if (out.includes("\n")) resolve(out.trim());
    });
    child.on("exit", () => reject(new Error(`leader fixture exited early: ${stderr}`)));
  });
  return { child, leading: line === "leading" };
}

describe("leader-only jobs on PostgreSQL", () => {
  it("two replicas ticking together: exactly one runs the job each tick, always the same one", async () => {
    const url = await cluster.createSchema(databaseUrl);
    const a = await replica(url);
    const b = await replica(url);
    for (let tick = 1; tick <= 6; tick++) {
      await Promise.all([a.job.tick(), b.job.tick()]);
      expect(a.runs() + b.runs()).toBe(tick);
    }
    expect([a.runs(), b.runs()].sort()).toEqual([0, 6]);
    const [leader, other] = a.runs() ? [a, b] : [b, a];
    expect(leader.leadership.status().get("ttl reaper")).toBe(true);
    expect(other.leadership.status().get("ttl reaper")).toBe(false);
    expect(leader.log.lines.filter((l) => l.includes("leading job on this replica"))).toHaveLength(1);
  });

  it("the leader's store closes: the other replica takes the job over at its next tick", async () => {
    const url = await cluster.createSchema(databaseUrl);
    const a = await replica(url);
    const b = await replica(url);
    await a.job.tick();
    await b.job.tick();
    expect([a.runs(), b.runs()]).toEqual([1, 0]);
    await a.store.close();
    // The lock went with A's connection: B's very next tick leads and runs.
    await b.job.tick();
    expect(b.runs()).toBe(1);
    expect(b.leadership.status().get("ttl reaper")).toBe(true);
    await expect.poll(() => a.leadership.status().get("ttl reaper"), { timeout: 10_000 }).toBe(false);
    expect(a.log.lines.some((l) => l.includes("no longer leading job on this replica"))).toBe(true);
    await a.job.tick();
    expect(a.runs()).toBe(1); // A's store is closed: it does not lead, and does not run
  });

  it("a leader process killed with SIGKILL frees the job: the next tick of a survivor runs it", async () => {
    const url = await cluster.createSchema(databaseUrl);
    const dead = await leaderProcess(url, "approval expiry");
    expect(dead.leading).toBe(true);
    const b = await replica(url, "approval expiry");
    await b.job.tick();
    expect(b.runs()).toBe(0); // the process leads: B does not run
    const exited = new Promise((r) => dead.child.once("exit", r));
    dead.child.kill("SIGKILL");
    await exited;
    // The server notices the closed socket and frees the lock; B's next tick (whenever it comes) leads.
    await tickUntilItRuns(b);
    expect(b.leadership.status().get("approval expiry")).toBe(true);
  });

  it("losing the lock's connection (the server ended it) is noticed at once and logged; the job is retaken later", async () => {
    const url = await cluster.createSchema(databaseUrl);
    const a = await replica(url);
    await a.job.tick();
    expect(a.runs()).toBe(1);
    // An operator or a failover ends the session holding the lock.
    await cluster.superQuery("SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted");
    await expect.poll(() => a.leadership.status().get("ttl reaper"), { timeout: 10_000 }).toBe(false);
    expect(
      a.log.lines.some((l) => l.includes("no longer leading job on this replica") && l.includes("lock lost")),
    ).toBe(true);
    await a.job.tick();
    expect(a.runs()).toBe(2);
  });

  it("a graceful shutdown hands the job over: close() releases the lock", async () => {
    const url = await cluster.createSchema(databaseUrl);
    const proc = await leaderProcess(url, "result reaper");
    expect(proc.leading).toBe(true);
    const b = await replica(url, "result reaper");
    await b.job.tick();
    expect(b.runs()).toBe(0);
    const exited = new Promise((r) => proc.child.once("exit", r));
    proc.child.stdin!.write("exit\n");
    await exited;
    await b.job.tick();
    expect(b.runs()).toBe(1);
  });
});

/** Ticks `r`'s job until it runs once (the server frees a killed session's lock shortly after the kill). */
async function tickUntilItRuns(r: { job: PeriodicJob; runs: () => number }): Promise<void> {
  await expect
    .poll(
      async () => {
        await r.job.tick();
        return r.runs();
      },
      { timeout: 15_000, interval: 100 },
    )
    .toBe(1);
}

describe("leadership without PostgreSQL (one process)", () => {
  it("the memory adapter leads every job, and one lock name has one holder at a time", async () => {
    const locks = new MemoryLeaderLocks();
    const a = new Leadership({ locks, log: memoryLogger() });
    const b = new Leadership({ locks, log: memoryLogger() });
    expect(await a.lead("ttl reaper")).toBe(true);
    expect(await a.lead("ttl reaper")).toBe(true);
    expect(await b.lead("ttl reaper")).toBe(false);
    expect(await b.lead("login reaper")).toBe(true);
    await a.close();
    expect(await a.lead("ttl reaper")).toBe(false); // closed: leads nothing
    expect(await b.lead("ttl reaper")).toBe(true);
  });
});
