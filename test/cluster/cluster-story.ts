// What the replica tests share: a PostgreSQL cluster, the fake Slack, three replicas behind the
// round-robin proxy, connections stored the way the CLI stores them, and read-backs of the shared
// database (audit, approvals) that no replica's memory can fake.
import { randomBytes } from "node:crypto";
import pg from "pg";
import { systemClock } from "../../src/clock/clock.js";
import { loadConfig } from "../../src/config/env.js";
import { parseRegistry } from "../../src/config/registry.js";
import { ConnectionLifecycle } from "../../src/connections/lifecycle.js";
import type { ThreadRef } from "../../src/domain/thread.js";
import { memoryLogger } from "../../src/log/logger.js";
import { openPostgresStore } from "../../src/store/postgres/pg-store.js";
import { resolveKeyRing } from "../../src/vault/key-source.js";
import { Vault } from "../../src/vault/vault.js";
import { type FakeSlack, startFakeSlack } from "../fixtures/slack/fake-slack-api.js";
import { fixtureRegistryDoc } from "../integration/broker-harness.js";
import { type PgCluster, startPostgres } from "../support/postgres.js";
import { envOf, processesReferencing } from "../support/proc.js";
import { type ReplicaSet, startReplicas } from "../support/replicas.js";

export const ALICE = "UALICE01";
export const BOB = "UBOB0002";
export const CHANNEL = "C0REPLICA";
/** Users with their own connection of `stubborn`, each calling in their own thread. */
export const LOADERS = ["ULOAD001", "ULOAD002", "ULOAD003", "ULOAD004"] as const;

/** The fixture vendor as `vendor`, and `stubborn`: the same, ignoring SIGTERM and stdin EOF, so it outlives a SIGKILLed replica. */
export function clusterRegistryDoc(): unknown {
  const doc = fixtureRegistryDoc() as {
    services: { vendor: { transport: Record<string, unknown> } & Record<string, unknown> };
  };
  const vendor = doc.services.vendor;
  return {
    services: {
      vendor,
      stubborn: { ...vendor, transport: { ...vendor.transport, env: { VENDOR_IGNORE_SIGTERM: "1" } } },
    },
  };
}

/** Everything a replica test file runs against. */
export interface Cluster {
  readonly pg: PgCluster;
  readonly fake: FakeSlack;
  readonly set: ReplicaSet;
  thread(n: number): ThreadRef;
  stop(): Promise<void>;
}

/** Starts PostgreSQL, the fake Slack (every test user a member of CHANNEL) and `count` replicas. */
export async function startCluster(count = 3): Promise<Cluster> {
  const pgc = await startPostgres();
  const fake = await startFakeSlack({ admins: [] });
  fake.setMembers(CHANNEL, [ALICE, BOB, ...LOADERS]);
  let set: ReplicaSet;
  try {
    set = await startReplicas({ count, cluster: pgc, fake, registry: clusterRegistryDoc() });
  } catch (err) {
    await fake.close();
    await pgc.stop();
    throw err;
  }
  return {
    pg: pgc,
    fake,
    set,
    thread: (n) => ({
      teamId: fake.teamId,
      channelId: CHANNEL,
      threadTs: `1700000${String(n).padStart(3, "0")}.000100`,
    }),
    async stop() {
      await set.stop();
      await fake.close();
      await pgc.stop();
    },
  };
}

/** Stores a user-scoped connection of `service` for `owner` through the library, as `connections add` does; returns its id and token. */
export async function addConnection(
  set: ReplicaSet,
  teamId: string,
  owner: string,
  service = "stubborn",
): Promise<{ id: string; token: string }> {
  const config = loadConfig(set.cliEnv);
  const { store } = await openPostgresStore({ url: set.databaseUrl });
  const lifecycle = new ConnectionLifecycle({
    store,
    vault: new Vault(resolveKeyRing(config).ring),
    registry: parseRegistry(clusterRegistryDoc(), "cluster"),
    clock: systemClock,
    log: memoryLogger("error"),
  });
  const token = `canary-${randomBytes(10).toString("hex")}`;
  try {
    const c = await lifecycle.create({
      teamId,
      ownerUserId: owner,
      service,
      scope: "user",
      credential: { kind: "fields", fields: { token, user: owner } },
      createdBy: "cli:test",
    });
    return { id: c.id, token };
  } finally {
    await store.close();
  }
}

/** Runs `sql` on the shared database as the broker's role. */
export async function query<T extends pg.QueryResultRow>(
  set: ReplicaSet,
  sql: string,
  params: unknown[] = [],
): Promise<T[]> {
  const c = new pg.Client({ connectionString: set.databaseUrl });
  await c.connect();
  try {
    return (await c.query<T>(sql, params)).rows;
  } finally {
    await c.end();
  }
}

/** Live fixture-vendor processes of a replica (its data dir is their HOME), optionally only those holding `token`. */
export function vendorsUnder(dataDir: string, token?: string): number[] {
  return processesReferencing([dataDir]).filter((p) => {
    const t = envOf(p).VENDOR_TOKEN;
    return t !== undefined && (token === undefined || t === token);
  });
}
