import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { type Deployment, openStore } from "../../src/app/store-factory.js";
import { ManualClock } from "../../src/clock/clock.js";
import { memoryLogger } from "../../src/log/logger.js";
import { KeyRing } from "../../src/vault/keyring.js";
import { newKeyB64 } from "../support/foundation.js";
import { type PgCluster, startPostgres } from "../support/postgres.js";

// The one choice of adapter set: the database openStore opened decides what differs between one
// process and replicas (signals, locks, turns, session records, login holders, start-up expiry),
// and two deployments on one PostgreSQL see each other through every shared part.

const ring = KeyRing.fromBase64(newKeyB64());
const thread = { teamId: "T1", channelId: "C1", threadTs: "1700000000.000100" };
const INIT = { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "host", version: "1" } };
const ROOM = { max: 100, idleBefore: 0 };
const DIGEST = `k_0123456789abcdef:${"ab".repeat(32)}`;
const record = (id: string) => ({
  id,
  teamId: "T1",
  tokenDigest: DIGEST,
  threadHeader: "T1/C1/1700000000.000100",
  protocolVersion: "2025-06-18",
  initialize: INIT,
  createdAt: 1_000,
});

let cluster: PgCluster;
let databaseUrl = "";
const opened: Deployment[] = [];
const dirs: string[] = [];
const clock = new ManualClock(1_700_000_000_000);

beforeAll(async () => {
  cluster = await startPostgres();
  databaseUrl = await cluster.createDatabase();
});
afterEach(async () => {
  for (const d of opened.splice(0).reverse()) await d.store.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
afterAll(async () => {
  await cluster?.stop();
});

async function open(config: { databaseUrl?: string; dbPath: string }): Promise<Deployment> {
  const storeConfig = { databaseUrl: config.databaseUrl, dbPath: config.dbPath, dbLockWaitMs: 2_000 };
  const d = await openStore(storeConfig, () => clock.now(), ring);
  opened.push(d);
  return d;
}

function sqliteFile(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-topology-"));
  dirs.push(dir);
  return path.join(dir, "slaude.db");
}

describe("the topology openStore returns", () => {
  it("with SQLite: one process, its parts in this process, its start-up expiring what a crash left", async () => {
    const { topology } = await open({ dbPath: sqliteFile() });
    expect(topology.kind).toBe("single-process");
    expect(topology.replicas).toBeUndefined();
    expect(topology.expireAbandonedAtStart).toBe(true);
    expect(topology.loginHolders.shared).toBe(false);
    const records = topology.sessionRecords(2);
    expect(records.shared).toBe(false);
    for (const id of ["s1", "s2", "s3"]) await records.open(record(id), ROOM);
    // Bounded by the count it was given: the oldest record is gone.
    expect(await records.notLive(["s1", "s2", "s3"])).toEqual(["s1"]);
    const lock = await topology.leaderLocks.tryHold("job:x", () => {});
    expect(lock).toBeDefined();
    expect(await topology.leaderLocks.tryHold("job:x", () => {})).toBeUndefined();
    const signals = topology.signals({ log: memoryLogger(), clock, keys: () => ring });
    const got: string[] = [];
    signals.subscribe("connection_ended", ({ connectionId }) => void got.push(connectionId));
    await signals.start();
    await signals.publish("connection_ended", { connectionId: "conn_1" });
    await vi.waitFor(() => expect(got).toEqual(["conn_1"]));
    await signals.close();
  });

  it("with PostgreSQL: replicas sharing turns, sessions, locks and signals, leaving pending calls to peers", async () => {
    const url = await cluster.createSchema(databaseUrl);
    const a = await open({ databaseUrl: url, dbPath: sqliteFile() });
    const b = await open({ databaseUrl: url, dbPath: sqliteFile() });
    expect(a.topology.kind).toBe("replicas");
    expect(a.topology.expireAbandonedAtStart).toBe(false);
    expect(a.topology.loginHolders.shared).toBe(true);
    expect(a.topology.leaderLocks).toBe(a.topology.refreshLock);

    // A turn reported to one replica is in force on the other.
    const turn = await a.topology.turns({}).set(thread, "U1", clock.now());
    const seen = await b.topology.turns({}).resolve(thread, turn.id, clock.now());
    expect(seen).toEqual({ kind: "caller", userId: "U1" });

    // A session opened on one replica is live on the other, whatever the local count.
    await a.topology.sessionRecords(1).open(record("s1"), ROOM);
    await a.topology.sessionRecords(1).open(record("s2"), ROOM);
    expect(await b.topology.sessionRecords(1).notLive(["s1", "s2"])).toEqual([]);

    // One leader per job across replicas.
    const held = await a.topology.leaderLocks.tryHold("job:x", () => {});
    expect(held).toBeDefined();
    expect(await b.topology.leaderLocks.tryHold("job:x", () => {})).toBeUndefined();
    await held?.release();

    // A signal published on one replica reaches the other.
    const log = memoryLogger();
    const sa = a.topology.signals({ log, clock, keys: () => ring });
    const sb = b.topology.signals({ log, clock, keys: () => ring });
    const got: string[] = [];
    sb.subscribe("connection_ended", ({ connectionId }) => void got.push(connectionId));
    await sa.start();
    await sb.start();
    await sa.publish("connection_ended", { connectionId: "conn_2" });
    await vi.waitFor(() => expect(got).toEqual(["conn_2"]), { timeout: 10_000 });
    await sa.close();
    await sb.close();
  });
});
