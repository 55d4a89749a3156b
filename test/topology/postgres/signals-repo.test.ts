// The PostgreSQL signals adapter against a real server: two "replicas" (two stores, two adapters)
// on one database hear each other's signals and their own; whatever else arrives on the channel
// (anyone who may connect can NOTIFY) is dropped, even a well-formed signal not sealed by a replica; a killed LISTEN connection is re-established and a
// gap is reported, so consumers re-read the database; a publish-only process never LISTENs.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { systemClock } from "../../../src/clock/clock.js";
import { memoryLogger } from "../../../src/log/logger.js";
import { openPostgresStore, type PostgresStore } from "../../../src/store/postgres/pg-store.js";
import { PgClusterSignals, SIGNAL_CHANNEL } from "../../../src/topology/postgres/signals-repo.js";
import { KeyRing } from "../../../src/vault/keyring.js";
import { newKeyB64 } from "../../support/foundation.js";
import { type PgCluster, startPostgres } from "../../support/postgres.js";

let cluster: PgCluster;
let open: { close(): Promise<void> }[] = [];
beforeAll(async () => {
  cluster = await startPostgres();
});
afterEach(async () => {
  for (const o of open.reverse()) await o.close();
  open = [];
});
afterAll(async () => {
  await cluster?.stop();
});

async function replicaStore(url: string): Promise<PostgresStore> {
  const { store } = await openPostgresStore({ url });
  open.push(store);
  return store;
}

/** The deployment's key ring: every replica of a test holds the same one. */
const keys = KeyRing.fromBase64(newKeyB64());

function adapter(store: PostgresStore, log = memoryLogger()): PgClusterSignals {
  const s = new PgClusterSignals(store.db, { log, clock: systemClock, keys, retryMs: { first: 20, max: 200 } });
  open.push(s);
  return s;
}

const listeners = (db: string) =>
  cluster
    .superQuery(`SELECT pid FROM pg_stat_activity WHERE datname = '${db}' AND query LIKE 'LISTEN %'`)
    .then((r) => r.rows.length);

describe("PgClusterSignals", () => {
  it("delivers a signal to every replica listening on the database, the sender included", async () => {
    const url = await cluster.createDatabase();
    const [a, b] = [adapter(await replicaStore(url)), adapter(await replicaStore(url))];
    const got: string[] = [];
    a.subscribe("connection_ended", ({ connectionId }) => void got.push(`a:${connectionId}`));
    b.subscribe("connection_ended", ({ connectionId }) => void got.push(`b:${connectionId}`));
    b.subscribe("approval_decided", ({ approvalId }) => void got.push(`b:${approvalId}`));
    await a.start();
    await b.start();
    await a.publish("connection_ended", { connectionId: "conn_1" });
    await b.publish("approval_decided", { approvalId: "appr_1" });
    await vi.waitFor(() => expect([...got].sort()).toEqual(["a:conn_1", "b:appr_1", "b:conn_1"]));
  });

  it("drops what is not exactly a known signal: never delivered, logged without its content", async () => {
    const url = await cluster.createDatabase();
    const store = await replicaStore(url);
    const log = memoryLogger();
    const s = adapter(store, log);
    const got: string[] = [];
    s.subscribe("connection_ended", ({ connectionId }) => void got.push(connectionId));
    await s.start();
    const forged = [
      "kill everything",
      JSON.stringify({ topic: "connection_ended", payload: { connectionId: "conn_a", all: true } }),
      JSON.stringify({ topic: "shutdown", payload: {} }),
      JSON.stringify({ topic: "connection_ended", payload: { connectionId: `secret-canary-ZZZ ${"x".repeat(2000)}` } }),
      // Well-formed, but not sealed under the key ring: what any other role could send.
      JSON.stringify({ topic: "connection_ended", payload: { connectionId: "conn_forged" } }),
    ];
    for (const text of forged) await store.db.notify(SIGNAL_CHANNEL, text);
    await s.publish("connection_ended", { connectionId: "conn_ok" });
    await vi.waitFor(() => expect(got).toEqual(["conn_ok"]));
    expect(log.lines.filter((l) => l.includes("cluster signal dropped"))).toHaveLength(forged.length);
    expect(log.lines.join("\n")).not.toContain("secret-canary-ZZZ");
  });

  it("re-LISTENs after its connection is killed, reports one gap, and receives again", async () => {
    const url = await cluster.createDatabase();
    const db = new URL(url).pathname.slice(1);
    const store = await replicaStore(url);
    const s = adapter(store);
    const got: string[] = [];
    let gaps = 0;
    s.subscribe("connection_ended", ({ connectionId }) => void got.push(connectionId));
    s.onGap(() => void gaps++);
    await s.start();
    expect(await listeners(db)).toBe(1);
    await cluster.superQuery(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${db}' AND query LIKE 'LISTEN %'`,
    );
    await vi.waitFor(() => expect(gaps).toBe(1), { timeout: 10_000, interval: 20 });
    expect(s.listening).toBe(true);
    expect(await listeners(db)).toBe(1);
    await s.publish("connection_ended", { connectionId: "conn_after" });
    await vi.waitFor(() => expect(got).toEqual(["conn_after"]));
  });

  it("a publish-only process (the CLI) never opens a LISTEN connection; close ends the listener's", async () => {
    const url = await cluster.createDatabase();
    const db = new URL(url).pathname.slice(1);
    const cli = adapter(await replicaStore(url));
    const server = adapter(await replicaStore(url));
    const got: string[] = [];
    server.subscribe("connection_ended", ({ connectionId }) => void got.push(connectionId));
    await server.start();
    await cli.publish("connection_ended", { connectionId: "conn_1" });
    await vi.waitFor(() => expect(got).toEqual(["conn_1"]));
    expect(await listeners(db)).toBe(1);
    await server.close();
    expect(await listeners(db)).toBe(0);
  });
});
