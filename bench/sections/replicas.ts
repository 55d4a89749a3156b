// Past one machine (issue 14): the warm mcp_call on PostgreSQL against SQLite (each broker in its
// own process, rounds rotated, the ratio per round), and throughput of 1 against 3 replicas on one
// PostgreSQL (a client per replica, directly), with each replica's CPU time per call read from
// /proc. On 2 cores three replicas add processes, not cores: the figure is reported as measured.
import path from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { systemClock } from "../../src/clock/clock.js";
import { loadConfig } from "../../src/config/env.js";
import { parseRegistry } from "../../src/config/registry.js";
import { ConnectionLifecycle } from "../../src/connections/lifecycle.js";
import { memoryLogger } from "../../src/log/logger.js";
import { openPostgresStore } from "../../src/store/postgres/pg-store.js";
import { resolveKeyRing } from "../../src/vault/key-source.js";
import { Vault } from "../../src/vault/vault.js";
import type { FakeSlack } from "../../test/fixtures/slack/fake-slack-api.js";
import { startPostgres } from "../../test/support/postgres.js";
import { type BrokerProc, benchRegistryDoc, brokerEnv, cliAdd, metricValue, startBroker } from "../lib/broker-proc.js";
import { cpuMs, freePort } from "../lib/procs.js";
import { pct, type Spread, spread, timeCalls } from "../lib/stats.js";
import { brokerCaller } from "./latency.js";

/** How much to measure. */
export interface ReplicaBenchParams {
  readonly rounds: number;
  readonly n: number;
  readonly warmup: number;
  readonly tpRounds: number;
  readonly workers: number;
  readonly perWorker: number;
  /** Sessions (users with their own connection and thread) the workers spread over. */
  readonly users: number;
}

/** The figures of this section. */
export interface ReplicaBenchResult {
  readonly warm: {
    readonly sqliteP50: Spread;
    readonly postgresP50: Spread;
    readonly ratio: Spread;
    /** What one warm call costs PostgreSQL, from replica 0's /metrics over the timed rounds. */
    readonly postgresDb: { readonly statementsPerCall: number; readonly transactionsPerCall: number };
  };
  readonly throughput: {
    readonly one: Spread;
    readonly three: Spread;
    readonly ratio: Spread;
    /** Broker CPU (all replicas' processes, vendors excluded) per call, ms. */
    readonly cpuMsPerCall: { readonly one: Spread; readonly three: Spread };
    /** In the 3-replica rounds: each replica's CPU ms per call it served. */
    readonly perReplicaCpuMsPerCall: readonly Spread[];
    readonly p99: { readonly one: Spread; readonly three: Spread };
    readonly errors: number;
  };
}

/** Stores a user-scoped echo connection per owner in the PostgreSQL database of `env`, through the library. */
async function seedPostgres(env: Record<string, string>, team: string, owners: readonly string[]): Promise<void> {
  const config = loadConfig(env);
  const { store } = await openPostgresStore({ url: config.databaseUrl! });
  const lifecycle = new ConnectionLifecycle({
    store,
    vault: new Vault(resolveKeyRing(config).ring),
    registry: parseRegistry(benchRegistryDoc(), "bench"),
    clock: systemClock,
    log: memoryLogger("error"),
  });
  try {
    for (const owner of owners)
      await lifecycle.create({
        teamId: team,
        ownerUserId: owner,
        service: "echo",
        scope: "user",
        credential: { kind: "fields", fields: { token: `pg-${owner}` } },
        createdBy: "cli:bench",
      });
  } finally {
    await store.close();
  }
}

type Caller = () => Promise<unknown>;

/** `workers` loops over `callers`; calls/s, p99 and the CPU each of `pids` spent, ms. */
async function run(
  callers: readonly Caller[],
  workers: number,
  perWorker: number,
  pids: readonly number[],
): Promise<{ perSec: number; p99: number; cpu: number[]; errors: number }> {
  const lat: number[] = [];
  let errors = 0;
  const cpu0 = pids.map(cpuMs);
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: workers }, async (_, k) => {
      for (let i = 0; i < perWorker; i++) {
        const t = performance.now();
        await callers[(k + i * workers) % callers.length]!().catch(() => errors++);
        lat.push(performance.now() - t);
      }
    }),
  );
  const secs = (performance.now() - t0) / 1000;
  return {
    perSec: (workers * perWorker) / secs,
    p99: pct(lat, 99),
    cpu: pids.map((p, i) => cpuMs(p) - cpu0[i]!),
    errors,
  };
}

/** Runs the section: its own PostgreSQL, one SQLite broker, three PostgreSQL replicas; `channel` must be the section's own (its members are set here). */
export async function replicaBench(
  fake: FakeSlack,
  dir: string,
  signingSecret: string,
  channel: string,
  P: ReplicaBenchParams,
): Promise<ReplicaBenchResult> {
  const team = fake.teamId;
  const slack = { apiUrl: fake.apiUrl, botToken: fake.botToken, signingSecret };
  const warmUser = { user: "U0PGWARM", thread: { teamId: team, channelId: channel, threadTs: "1700000100.000001" } };
  const users = Array.from({ length: P.users }, (_, i) => ({
    user: `UPGTP${String(i).padStart(3, "0")}`,
    thread: { teamId: team, channelId: channel, threadTs: `1700000101.${String(i).padStart(6, "0")}` },
  }));
  fake.setMembers(channel, [warmUser.user, ...users.map((u) => u.user)]);
  const pg = await startPostgres();
  const brokers: BrokerProc[] = [];
  const clients: Client[] = [];
  try {
    const url = await pg.createDatabase();
    const sqliteEnv = brokerEnv({ dir: path.join(dir, "sqlite"), slack }, await freePort());
    await cliAdd(sqliteEnv, { team, scope: "user", owner: warmUser.user, token: "sqlite-token" });
    const env0 = brokerEnv({ dir: path.join(dir, "pg-0"), slack, env: { SLAUDE_DATABASE_URL: url } }, await freePort());
    await seedPostgres(env0, team, [warmUser.user, ...users.map((u) => u.user)]);
    const envs = [env0];
    for (let i = 1; i < 3; i++)
      envs.push({
        ...env0,
        PORT: String(await freePort()),
        SLAUDE_DATA_DIR: path.join(dir, `pg-${i}`),
        HOME: path.join(dir, `pg-${i}`),
      });
    const [sqlite, ...replicas] = await Promise.all([startBroker(sqliteEnv), ...envs.map((e) => startBroker(e))]);
    brokers.push(sqlite!, ...replicas);

    // Warm call: the same user, thread and echo child on either store, rounds rotated.
    const s = await brokerCaller(sqlite!, warmUser.thread, warmUser.user);
    const p = await brokerCaller(replicas[0]!, warmUser.thread, warmUser.user);
    clients.push(s.client, p.client);
    await timeCalls(s.call, P.warmup);
    await timeCalls(p.call, P.warmup);
    const sq: number[] = [];
    const pq: number[] = [];
    const db0 = await replicas[0]!.metrics();
    for (let r = 0; r < P.rounds; r++) {
      for (const [call, out] of r % 2 === 0
        ? ([
            [s.call, sq],
            [p.call, pq],
          ] as const)
        : ([
            [p.call, pq],
            [s.call, sq],
          ] as const))
        out.push(pct(await timeCalls(call, P.n), 50));
    }
    const db1 = await replicas[0]!.metrics();
    const perPgCall = (name: string) => (metricValue(db1, name) - metricValue(db0, name)) / (P.rounds * P.n);
    const postgresDb = {
      statementsPerCall: perPgCall("slaude_db_statements_total"),
      transactionsPerCall: perPgCall("slaude_db_transactions_total"),
    };
    await s.client.close().catch(() => {});
    await sqlite!.stop();

    // Throughput: the same sessions' users on replica 0 only, or spread over the three replicas.
    const callersOn = async (pick: (i: number) => BrokerProc): Promise<Caller[]> =>
      Promise.all(
        users.map(async (u, i) => {
          const c = await brokerCaller(pick(i), u.thread, u.user);
          clients.push(c.client);
          return c.call;
        }),
      );
    const one = await callersOn(() => replicas[0]!);
    const three = await callersOn((i) => replicas[i % 3]!);
    for (const c of [...one, ...three]) await c();
    const pids = replicas.map((b) => b.proc.pid);
    const o: Awaited<ReturnType<typeof run>>[] = [];
    const t: Awaited<ReturnType<typeof run>>[] = [];
    for (let r = 0; r < P.tpRounds; r++) {
      for (const [callers, out] of r % 2 === 0
        ? ([
            [one, o],
            [three, t],
          ] as const)
        : ([
            [three, t],
            [one, o],
          ] as const))
        out.push(await run(callers, P.workers, P.perWorker, pids));
    }
    const calls = P.workers * P.perWorker;
    const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);
    // Each replica serves a third of the users' calls in the spread rounds (users are assigned i % 3).
    const share = (k: number) => users.filter((_, i) => i % 3 === k).length / users.length;
    return {
      warm: {
        sqliteP50: spread(sq),
        postgresP50: spread(pq),
        ratio: spread(pq.map((x, i) => x / sq[i]!)),
        postgresDb,
      },
      throughput: {
        one: spread(o.map((x) => x.perSec)),
        three: spread(t.map((x) => x.perSec)),
        ratio: spread(t.map((x, i) => x.perSec / o[i]!.perSec)),
        cpuMsPerCall: {
          one: spread(o.map((x) => sum(x.cpu) / calls)),
          three: spread(t.map((x) => sum(x.cpu) / calls)),
        },
        perReplicaCpuMsPerCall: [0, 1, 2].map((k) => spread(t.map((x) => x.cpu[k]! / (calls * share(k))))),
        p99: { one: spread(o.map((x) => x.p99)), three: spread(t.map((x) => x.p99)) },
        errors: sum([...o, ...t].map((x) => x.errors)),
      },
    };
  } finally {
    for (const c of clients) await c.close().catch(() => {});
    for (const b of brokers) await b.stop();
    await pg.stop();
  }
}
