// Side by side in one run: the warm mcp_call on a SQLite broker, on a PostgreSQL broker built from
// another checkout (`--base <dir>`, its dist/ built) and on one built from this checkout, rounds
// rotated, p50 per round and each PostgreSQL broker's statements and transactions per call (from
// /metrics), with the CPU each broker and the PostgreSQL server spent per call. With `--log` the statements one warm call sends on this checkout's broker are printed
// from the server's statement log; with `--cpu-prof DIR` this checkout's PostgreSQL broker writes a
// CPU profile there, and its per-call budget by stage is printed (as bench:profile prints its own).
// Usage: npm run build && tsx bench/pg-ab.ts --base /tmp/base [--rounds 9 --n 150] [--log] [--cpu-prof DIR]
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { allPids, readStat } from "../src/proc/proc.js";
import { startFakeSlack } from "../test/fixtures/slack/fake-slack-api.js";
import { startPostgres } from "../test/support/postgres.js";
import { type BrokerProc, brokerEnv, cliAdd, metricValue, ROOT, startBroker } from "./lib/broker-proc.js";
import { cpuMs, freePort } from "./lib/procs.js";
import { budgetLines, indexProfile, STAGES, stageBudget } from "./lib/profile-stages.js";
import { pct, showSpread, spread, timeCalls } from "./lib/stats.js";
import { brokerCaller } from "./sections/latency.js";

const args = process.argv.slice(2);
const opt = (name: string, dflt: string): string => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1]! : dflt;
};
const base = opt("base", "");
const rounds = Number(opt("rounds", "9"));
const n = Number(opt("n", "150"));
const showLog = args.includes("--log");
const profDir = opt("cpu-prof", "");

const fake = await startFakeSlack({ admins: [] });
const team = fake.teamId;
const channel = "C0PGAB";
const user = "U0PGAB";
const thread = { teamId: team, channelId: channel, threadTs: "1700000200.000001" };
fake.setMembers(channel, [user]);
const slack = { apiUrl: fake.apiUrl, botToken: fake.botToken, signingSecret: randomBytes(16).toString("hex") };
const tmp = path.join(os.tmpdir(), `slaude-pg-ab-${process.pid}`);
const pg = await startPostgres();

interface Broker extends BrokerProc {
  readonly label: string;
  readonly client: Client;
  call(): Promise<unknown>;
}

async function broker(
  label: string,
  root: string,
  extra: Record<string, string>,
  nodeArgs: readonly string[] = [],
): Promise<Broker> {
  const env = brokerEnv({ dir: path.join(tmp, label), slack, env: extra }, await freePort());
  await cliAdd(env, { team, scope: "user", owner: user, token: `tok-${label}` });
  const b = await startBroker(env, nodeArgs, path.join(root, "bin/slaude-connect.js"));
  return { ...b, label, ...(await brokerCaller(b, thread, user)) };
}

const brokers: Broker[] = [];
try {
  const urlA = await pg.createDatabase();
  const urlB = await pg.createDatabase();
  brokers.push(await broker("sqlite", ROOT, {}));
  if (base) brokers.push(await broker("pg-base", base, { SLAUDE_DATABASE_URL: urlA }));
  const profile = profDir ? ["--cpu-prof", `--cpu-prof-dir=${profDir}`] : [];
  brokers.push(await broker("pg-this", ROOT, { SLAUDE_DATABASE_URL: urlB }, profile));
  for (const b of brokers) await timeCalls(b.call, 50);
  // The server's CPU: every child of the postmaster (backends, WAL writer, checkpointer), read
  // around each broker's round (the rounds run one at a time, so it is that broker's, plus noise).
  const dataDir = (await pg.superQuery("SHOW data_directory")).rows[0].data_directory as string;
  const postmaster = Number(readFileSync(path.join(dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
  const serverCpu = () => allPids().reduce((sum, p) => sum + (readStat(p)?.ppid === postmaster ? cpuMs(p) || 0 : 0), 0);
  const p50: number[][] = brokers.map(() => []);
  const cpu = brokers.map(() => ({ broker: 0, server: 0 }));
  const m0 = await Promise.all(brokers.map((b) => b.metrics()));
  for (let r = 0; r < rounds; r++)
    for (let k = 0; k < brokers.length; k++) {
      const i = (k + r) % brokers.length;
      const [b0, s0] = [cpuMs(brokers[i]!.proc.pid), serverCpu()];
      p50[i]!.push(pct(await timeCalls(brokers[i]!.call, n), 50));
      cpu[i]!.broker += cpuMs(brokers[i]!.proc.pid) - b0;
      cpu[i]!.server += serverCpu() - s0;
    }
  const m1 = await Promise.all(brokers.map((b) => b.metrics()));
  console.log(
    `load average ${os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(" ")}; ${rounds} rounds of ${n} calls`,
  );
  brokers.forEach((b, i) => {
    const per = (name: string) => (metricValue(m1[i]!, name) - metricValue(m0[i]!, name)) / (rounds * n);
    const ratio = spread(p50[i]!.map((x, r) => x / p50[0]![r]!));
    console.log(
      `${b.label.padEnd(8)} p50 ${showSpread(spread(p50[i]!), " ms", 2)}  ÷ SQLite ${showSpread(ratio)}  statements/call ${per("slaude_db_statements_total").toFixed(2)}  transactions/call ${per("slaude_db_transactions_total").toFixed(2)}  CPU/call broker ${(cpu[i]!.broker / (rounds * n)).toFixed(2)} ms, server ${(cpu[i]!.server / (rounds * n)).toFixed(2)} ms`,
    );
  });
  if (showLog) {
    const db = new URL(urlB).pathname.slice(1);
    await pg.superQuery(`ALTER DATABASE "${db}" SET log_statement = 'all'`);
    await pg.superQuery("ALTER SYSTEM SET log_min_duration_statement = -1");
    await pg.superQuery("SELECT pg_reload_conf()");
    const log = path.join(path.dirname(dataDir), "server.log");
    // New sessions pick up the database setting: the pool's clients are replaced as they idle out,
    // so force fresh ones by terminating the broker's backends.
    await pg.superQuery(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${db}'`);
    const thisOne = brokers[brokers.length - 1]!;
    await timeCalls(thisOne.call, 5).catch(() => {});
    await timeCalls(thisOne.call, 5);
    const before = existsSync(log) ? readFileSync(log, "utf8").length : 0;
    await thisOne.call();
    await new Promise((r) => setTimeout(r, 300));
    const lines = readFileSync(log, "utf8").slice(before).split("\n");
    console.log("statement log of one warm call (pg-this):");
    for (const l of lines) if (/statement:|execute/.test(l)) console.log(`  ${l.slice(0, 220)}`);
  }
} finally {
  for (const b of brokers) {
    await b.client.close().catch(() => {});
    await b.stop();
  }
  await pg.stop();
  await fake.close();
  if (profDir) printBudget(profDir, rounds * n + 50);
}

/** The busy CPU of pg-this's profile in `dir` by stage, per call (start-up and warm-up calls included). */
function printBudget(dir: string, calls: number): void {
  const file = readdirSync(dir)
    .filter((f) => f.endsWith(".cpuprofile"))
    .sort()
    .at(-1);
  if (!file) return void console.log(`no CPU profile was written in ${dir}`);
  const stages = stageBudget(indexProfile(JSON.parse(readFileSync(path.join(dir, file), "utf8"))));
  const total = STAGES.reduce((sum, st) => sum + stages.get(st)!, 0);
  console.log(`pg-this busy CPU ${(total / 1000 / calls).toFixed(3)} ms/call (${path.join(dir, file)}), by stage:`);
  console.log(budgetLines(stages, total, calls));
}
