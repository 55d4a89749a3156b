// Another role on the same PostgreSQL server (PUBLIC has CONNECT on a new database by default)
// attacks the broker's shared machinery: it takes the advisory locks the broker's names hash to
// (a job's lock, the migrations lock), LISTENs on the signal channel, and NOTIFYs forged signals.
// Lock keys are HMACs under the key ring, so names no longer reach them; a holder of the exact key
// (someone watching pg_locks) delays start-up by a bounded wait with an error naming its role, and an
// expired credential is refused at read time whoever holds the reaper's lock; signals are sealed, so
// a listener reads no id and a forged, altered or replayed signal is never delivered.
import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { ManualClock, systemClock } from "../../../src/clock/clock.js";
import { ConnectionLifecycle } from "../../../src/connections/lifecycle.js";
import { Leadership } from "../../../src/jobs/leadership.js";
import { memoryLogger } from "../../../src/log/logger.js";
import { StoreError } from "../../../src/store/errors.js";
import { LockKeys } from "../../../src/store/postgres/lock-keys.js";
import { MIGRATION_LOCK } from "../../../src/store/postgres/migrator.js";
import { openPostgresStore, type PostgresStore } from "../../../src/store/postgres/pg-store.js";
import { PostgresTopology } from "../../../src/topology/postgres/postgres-topology.js";
import { PgClusterSignals, SIGNAL_CHANNEL } from "../../../src/topology/postgres/signals-repo.js";
import { KeyRing } from "../../../src/vault/keyring.js";
import { Vault } from "../../../src/vault/vault.js";
import { newKeyB64, testRegistry, threadInput } from "../../support/foundation.js";
import { type PgCluster, startPostgres } from "../../support/postgres.js";

let cluster: PgCluster;
let intruderRole: { name: string; password: string };
const open: { close(): Promise<void> }[] = [];
const clients: pg.Client[] = [];
beforeAll(async () => {
  cluster = await startPostgres();
  intruderRole = { name: `intruder_${randomBytes(3).toString("hex")}`, password: randomBytes(8).toString("hex") };
  // An ordinary role of someone else on the same server: no grant from the broker's role at all.
  await cluster.superQuery(
    `CREATE ROLE ${intruderRole.name} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD '${intruderRole.password}'`,
  );
});
afterEach(async () => {
  for (const c of clients.splice(0)) await c.end().catch(() => {});
  for (const o of open.splice(0).reverse()) await o.close();
});
afterAll(async () => {
  await cluster?.stop();
});

/** A session of the other role on the broker's database (it connects through PUBLIC's default CONNECT). */
async function intruder(url: string): Promise<pg.Client> {
  const u = new URL(url);
  u.username = intruderRole.name;
  u.password = intruderRole.password;
  const c = new pg.Client({ connectionString: u.toString() });
  c.on("error", () => {});
  await c.connect();
  clients.push(c);
  return c;
}

const ring = KeyRing.fromBase64(newKeyB64());

async function replicaStore(url: string, opts: { lockWaitMs?: number; keys?: KeyRing } = {}): Promise<PostgresStore> {
  const { store } = await openPostgresStore({
    url,
    lockKeys: LockKeys.fromRing(opts.keys ?? ring),
    ...(opts.lockWaitMs ? { lockWaitMs: opts.lockWaitMs } : {}),
  });
  open.push(store);
  return store;
}

/** What the old code's advisory lock key of `name` was: anyone could compute it. */
const readableKey = (c: pg.Client, name: string) => c.query("SELECT pg_advisory_lock(hashtextextended($1, 0))", [name]);

describe("another role on the server: advisory locks", () => {
  it("holding the lock the TTL reaper's name hashes to no longer stalls it", async () => {
    const url = await cluster.createDatabase();
    const store = await replicaStore(url);
    const evil = await intruder(url);
    await readableKey(evil, "slaude-connect:public:job:ttl reaper");
    const leadership = new Leadership({ locks: new PostgresTopology(store.db).locks, log: memoryLogger() });
    expect(await leadership.lead("ttl reaper")).toBe(true);
    await leadership.close();
  });

  it("another role holding the reaper's exact lock: an expired connection is refused at read time, and the reaper runs anyway", async () => {
    const url = await cluster.createDatabase();
    const store = await replicaStore(url);
    const other = await replicaStore(url);
    // The worst case: the other role watched pg_locks and took the real key while no replica held it.
    const evil = await intruder(url);
    for (const k of store.db.lockKeys.keys("slaude-connect:public:job:ttl reaper"))
      await evil.query("SELECT pg_advisory_lock($1::bigint)", [k]);

    const clock = new ManualClock();
    const lifecycle = new ConnectionLifecycle({
      store,
      vault: new Vault(ring),
      registry: testRegistry(),
      clock,
      log: memoryLogger(),
    });
    const c = await lifecycle.create({ ...threadInput("U1", "tok-canary"), ttlMs: 3_000 });
    const thread = { teamId: "T1", channelId: "C1", threadTs: "1700000000.000100" };
    expect(
      (await store.connections.ownConnection({ thread, caller: "U1", service: "svc", now: clock.now() }))?.id,
    ).toBe(c.id);
    clock.advance(3_000);
    // Not reaped yet (its row is still `active`), and already never served: every read compares expires_at with now.
    expect((await store.connections.get(c.id))?.status).toBe("active");
    expect(
      await store.connections.ownConnection({ thread, caller: "U1", service: "svc", now: clock.now() }),
    ).toBeUndefined();

    // A lock held by a role that is not ours does not count: every replica runs the job.
    const log = memoryLogger();
    const leaders = [
      new Leadership({ locks: new PostgresTopology(store.db).locks, log }),
      new Leadership({ locks: new PostgresTopology(other.db).locks, log: memoryLogger() }),
    ];
    expect(await Promise.all(leaders.map((l) => l.lead("ttl reaper")))).toEqual([true, true]);
    expect(
      log.lines.filter((l) => l.includes("held by another database role") && l.includes(intruderRole.name)),
    ).toHaveLength(1);
    expect(await lifecycle.reapExpired()).toBe(1);
    const reaped = await store.connections.get(c.id);
    expect(reaped?.status).toBe("expired");
    expect(reaped?.sealed).toBeNull();

    // Once it lets go, one replica leads again and the other does not.
    await evil.end();
    await vi.waitFor(async () =>
      expect(await new PostgresTopology(store.db).locks.foreignHolder("job:ttl reaper")).toBeUndefined(),
    );
    const after = [await leaders[0]!.lead("ttl reaper"), await leaders[1]!.lead("ttl reaper")];
    expect(after).toEqual([true, false]);
    for (const l of leaders) await l.close();
  });

  it("holding the lock MCP session opens used to hash to no longer stalls them", async () => {
    const url = await cluster.createDatabase();
    const store = await replicaStore(url, { lockWaitMs: 2_000 });
    const evil = await intruder(url);
    await readableKey(evil, "slaude-connect:public:mcp-session-open");
    const init = { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "host", version: "1" } };
    // Old code: the open waits for the other role's lock until lock_timeout, then fails as busy; every open does.
    const opened = await new PostgresTopology(store.db).mcpSessions.open(
      {
        id: "s1",
        teamId: "T1",
        threadHeader: "T1/C1/1700000000.000100",
        protocolVersion: "2025-06-18",
        initialize: init,
        createdAt: 1_000,
        tokenDigest: `k1:${"d".repeat(64)}`,
      },
      { max: 10, idleBefore: 0 },
    );
    expect(opened.opened).toBe(true);
  });

  it("holding the lock the migrations' name hashes to does not hold back start-up", async () => {
    const url = await cluster.createDatabase();
    const evil = await intruder(url);
    await readableKey(evil, MIGRATION_LOCK);
    // Old code: pg_advisory_lock with lock_timeout 0 waits until the other role lets go (forever, if it never does).
    const store = await replicaStore(url);
    expect(await store.ping()).toBe(true);
  });

  it("a session holding the migrations' exact lock fails start-up after the bounded wait, naming the other role", async () => {
    const url = await cluster.createDatabase();
    const evil = await intruder(url);
    for (const k of LockKeys.fromRing(ring).keys(MIGRATION_LOCK))
      await evil.query("SELECT pg_advisory_lock($1::bigint)", [k]);
    const err = await openPostgresStore({ url, lockKeys: LockKeys.fromRing(ring), migrationLockWaitMs: 300 }).then(
      (r) => {
        open.push(r.store);
        return undefined;
      },
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StoreError);
    expect((err as StoreError).code).toBe("migration_lock_timeout");
    expect((err as Error).message).toContain(`ANOTHER role "${intruderRole.name}"`);
    expect((err as Error).message).toContain("revoke CONNECT on this database from PUBLIC");
    // Once it lets go, the next start migrates.
    await evil.end();
    expect(await (await replicaStore(url)).ping()).toBe(true);
  });

  it("during a rolling key change, replicas whose rings share a key still exclude each other", async () => {
    const url = await cluster.createDatabase();
    const k1 = newKeyB64();
    const k2 = newKeyB64();
    const steps: [KeyRing, KeyRing][] = [
      [KeyRing.fromBase64(k1), KeyRing.fromBase64(k2, [k1])], // new primary rolled out beside the old one
      [KeyRing.fromBase64(k2, [k1]), KeyRing.fromBase64(k2)], // the previous key dropped after `keys rotate`
    ];
    for (const [oldRing, newRing] of steps) {
      const a = await replicaStore(url, { keys: oldRing });
      const b = await replicaStore(url, { keys: newRing });
      const la = new Leadership({ locks: new PostgresTopology(a.db).locks, log: memoryLogger() });
      const lb = new Leadership({ locks: new PostgresTopology(b.db).locks, log: memoryLogger() });
      expect(await la.lead("ttl reaper")).toBe(true);
      expect(await lb.lead("ttl reaper")).toBe(false);
      await la.close();
      expect(await lb.lead("ttl reaper")).toBe(true);
      expect(await la.lead("ttl reaper")).toBe(false);
      await lb.close();
    }
  });
});

describe("another role on the server: signals", () => {
  function adapter(store: PostgresStore, keys = ring, log = memoryLogger()): PgClusterSignals {
    const s = new PgClusterSignals(store.db, { log, clock: systemClock, keys, retryMs: { first: 20, max: 200 } });
    open.push(s);
    return s;
  }

  it("a listener of another role reads no id, and what it forges, alters or replays is never delivered", async () => {
    const url = await cluster.createDatabase();
    const store = await replicaStore(url);
    const log = memoryLogger();
    const s = adapter(store, ring, log);
    const cancelled: string[] = [];
    const ended: string[] = [];
    s.subscribe("call_cancelled", ({ sessionId, requestId }) => void cancelled.push(`${sessionId}/${requestId}`));
    s.subscribe("connection_ended", ({ connectionId }) => void ended.push(connectionId));
    await s.start();

    const evil = await intruder(url);
    const heard: string[] = [];
    evil.on("notification", (n) => heard.push(n.payload ?? ""));
    await evil.query(`LISTEN ${SIGNAL_CHANNEL}`);

    const sessionId = "0f8c2b1e-5d7a-4c3b-9e61-2a4b6c8d0e1f";
    await s.publish("call_cancelled", { sessionId, requestId: 7 });
    await s.publish("connection_ended", { connectionId: "conn_canary_1234" });
    await vi.waitFor(() => expect(heard).toHaveLength(2));
    await vi.waitFor(() => expect(ended).toEqual(["conn_canary_1234"]));
    expect(cancelled).toEqual([`${sessionId}/7`]);
    for (const text of heard) {
      expect(text).not.toContain(sessionId);
      expect(text).not.toContain("conn_canary_1234");
      expect(text).not.toContain("call_cancelled");
    }

    // Forged in the old wire format, an altered sealed signal, and a replay of a real one.
    await evil.query("SELECT pg_notify($1, $2)", [
      SIGNAL_CHANNEL,
      JSON.stringify({ topic: "call_cancelled", payload: { sessionId, requestId: 8 } }),
    ]);
    const sealed = JSON.parse(heard[0]!) as { b: { c: string }[] };
    const flipped = Buffer.from(sealed.b[0]!.c, "base64");
    flipped[0]! ^= 1;
    sealed.b[0]!.c = flipped.toString("base64");
    await evil.query("SELECT pg_notify($1, $2)", [SIGNAL_CHANNEL, JSON.stringify(sealed)]);
    await evil.query("SELECT pg_notify($1, $2)", [SIGNAL_CHANNEL, heard[0]!]);
    // Sealed under another deployment's key ring: as good as forged here.
    const elsewhere = adapter(await replicaStore(url), KeyRing.fromBase64(newKeyB64()));
    await elsewhere.publish("call_cancelled", { sessionId, requestId: 9 });
    // A real signal after them: the channel delivers in order, so once it is here the others have been judged.
    await s.publish("connection_ended", { connectionId: "conn_after" });
    await vi.waitFor(() => expect(ended).toEqual(["conn_canary_1234", "conn_after"]));
    expect(cancelled).toEqual([`${sessionId}/7`]);
    const drops = log.lines.filter((l) => l.includes("cluster signal dropped"));
    expect(drops.map((l) => /"why":"(\w+)"/.exec(l)?.[1])).toEqual(["malformed", "forged", "replayed", "unknown_key"]);
  });

  it("during a rolling key change, replicas whose rings share a key hear each other", async () => {
    const url = await cluster.createDatabase();
    const k1 = newKeyB64();
    const k2 = newKeyB64();
    const pairs: [KeyRing, KeyRing][] = [
      [KeyRing.fromBase64(k1), KeyRing.fromBase64(k2, [k1])],
      [KeyRing.fromBase64(k2, [k1]), KeyRing.fromBase64(k2)],
    ];
    for (const [i, [ra, rb]] of pairs.entries()) {
      const a = adapter(await replicaStore(url), ra);
      const b = adapter(await replicaStore(url), rb);
      const got: string[] = [];
      a.subscribe("connection_ended", ({ connectionId }) => void got.push(`a:${connectionId}`));
      b.subscribe("connection_ended", ({ connectionId }) => void got.push(`b:${connectionId}`));
      await a.start();
      await b.start();
      await a.publish("connection_ended", { connectionId: `from_a_${i}` });
      await b.publish("connection_ended", { connectionId: `from_b_${i}` });
      await vi.waitFor(() =>
        expect([...got].sort()).toEqual([`a:from_a_${i}`, `a:from_b_${i}`, `b:from_a_${i}`, `b:from_b_${i}`]),
      );
      await a.close();
      await b.close();
    }
  });
});
