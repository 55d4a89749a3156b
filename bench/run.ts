// npm run bench [-- --quick] [-- --json FILE]: the broker measured against the paths people would
// otherwise use, side by side in one run, every server in its own process, HTTP in:
//   direct      SDK client → stdio child (the floor)
//   bare        SDK client → HTTP → a bare SDK pass-through process → stdio child
//   mcp-proxy   SDK client → HTTP → mcp-proxy's CLI process → stdio child
//   broker      SDK client → HTTP → `slaude-connect serve` (compiled, Slack for membership, a
//               connection added through the CLI, the turn posted to /v1/turns) → pool → stdio child
//   broker, 2026-07-28  the same broker, thread and turn from an SDK v2 client pinned to the stateless era
// and, apart, the login live view (real Chromium on both sides, bench/sections/login.ts).
// Paths are rotated round by round and every ratio is computed per round, then reported as the
// median with its min–max. Each target of issues 13 and 25 gets a PASS/FAIL line. Absolute numbers are
// noisy on a shared machine; the ratios are what to compare across commits (--json).
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { startFakeSlack } from "../test/fixtures/slack/fake-slack-api.js";
import { type BrokerProc, cliAdd, launchBroker, metricValue, others, seed } from "./lib/broker-proc.js";
import { countClientAbortWarnings } from "./lib/client-warnings.js";
import { rssMb } from "./lib/procs.js";
import { ms, ratioTarget, showSpread, showTarget, type TargetResult, target, timeCalls } from "./lib/stats.js";
import { approvalRoundTrip } from "./sections/approval.js";
import { cold } from "./sections/cold.js";
import { hygiene } from "./sections/hygiene.js";
import { bare, brokerCaller, brokerModernCaller, direct, latency, mcpProxy } from "./sections/latency.js";
import { measureLogin } from "./sections/login.js";
import { overload } from "./sections/overload.js";
import { replicaBench } from "./sections/replicas.js";
import { scale } from "./sections/scale.js";
import { bareCallers, brokerCallers, throughput } from "./sections/throughput.js";
import { usersWithThreads } from "./sections/users.js";

const args = process.argv.slice(2);
const quick = args.includes("--quick");
const jsonOut = args.includes("--json") ? args[args.indexOf("--json") + 1] : undefined;
const P = quick
  ? {
      rounds: 3,
      n: 50,
      warmup: 20,
      tpRounds: 2,
      tpPerWorker: 20,
      cold: 2,
      stored: 1_000,
      scaleRows: [100, 2_000] as [number, number],
      scaleRounds: 2,
      scaleN: 10,
      overload: 3,
      approvals: 3,
      lists: 20,
      calls: 1_000,
    }
  : {
      rounds: 10,
      n: 300,
      warmup: 100,
      tpRounds: 4,
      tpPerWorker: 125,
      cold: 5,
      stored: 10_000,
      scaleRows: [100, 100_000] as [number, number],
      scaleRounds: 6,
      scaleN: 50,
      overload: 10,
      approvals: 20,
      lists: 20,
      calls: 10_000,
    };

// The bench's own SDK clients warn once per call past 1,500 (bench/lib/client-warnings.ts): count, don't print.
const abortWarnings = countClientAbortWarnings();

const out: string[] = [];
const say = (line = "") => {
  out.push(line);
  process.stdout.write(`${line}\n`);
};
const progress = (what: string) => process.stderr.write(`[bench] ${what}\n`);
const targets: TargetResult[] = [];
const figures: Record<string, unknown> = {
  quick,
  at: new Date().toISOString(),
  node: process.version,
  cpus: os.cpus().length,
};

const tmp = mkdtempSync(path.join(os.tmpdir(), "slaude-bench-"));
const signingSecret = `bench-signing-${randomBytes(8).toString("hex")}`;
const fake = await startFakeSlack({ admins: [] });
const team = fake.teamId;
const CHANNEL = "C0BENCH";
const alice = { user: "U0ALICE", thread: { teamId: team, channelId: CHANNEL, threadTs: "1700000000.000001" } };
const tpUsers = usersWithThreads(team, CHANNEL, "UTP", 50, 1700000001);
const coldUsers = usersWithThreads(team, CHANNEL, "UCOLD", P.cold, 1700000002);
const borrow = {
  owner: "U0OWNER",
  borrower: "U0BORROW",
  thread: { teamId: team, channelId: CHANNEL, threadTs: "1700000003.000001" },
};
fake.setMembers(CHANNEL, [
  alice.user,
  ...tpUsers.map((u) => u.user),
  ...coldUsers.map((u) => u.user),
  borrow.owner,
  borrow.borrower,
]);

let broker: BrokerProc | undefined;
const closers: (() => Promise<unknown>)[] = [];
try {
  say(
    `slaude-connect bench${quick ? " (--quick)" : ""}: ${os.cpus().length} CPUs, load ${os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(" ")}`,
  );
  progress("starting the broker and the paths");
  broker = await launchBroker(
    { dir: path.join(tmp, "broker"), slack: { apiUrl: fake.apiUrl, botToken: fake.botToken, signingSecret } },
    async (env) => {
      await cliAdd(env, { team, scope: "user", owner: alice.user, token: "alice-token" });
      await seed(env, team, [
        ...others(team, P.stored),
        ...[...tpUsers, ...coldUsers].map((u) => ({ owner: u.user })),
        { owner: borrow.owner, thread: borrow.thread },
      ]);
    },
  );
  const b = broker;
  const [d, ba, mp] = [await direct(), await bare(), await mcpProxy()];
  closers.push(
    () => d.close(),
    () => ba.close(),
    () => mp.close(),
  );
  const me = await brokerCaller(b, alice.thread, alice.user);
  closers.push(() => me.client.close());
  const modern = await brokerModernCaller(b, alice.thread, alice.user);
  closers.push(() => modern.client.close());

  // 50 live children on each side before anything is timed (the memory figure's setting too).
  const bareTp = await bareCallers(ba.url, tpUsers.length);
  const brokerTp = await brokerCallers(b, tpUsers);
  closers.push(async () => Promise.all([...bareTp.clients, ...brokerTp.clients].map((c) => c.close().catch(() => {}))));
  progress("warming 50 children on each side");
  for (const c of brokerTp.callers) await c();
  const rss: Record<string, number> = { afterWarmup: rssMb(b.proc.pid) };
  let brokerCalls = brokerTp.callers.length;

  progress("latency");
  const lat = await latency(
    [
      {
        key: "direct",
        name: "direct client → child",
        call: () => d.client.callTool({ name: "echo", arguments: { text: "ping" } }),
      },
      {
        key: "bare",
        name: "client → bare SDK pass-through → child",
        pid: ba.proc!.pid,
        call: () => ba.client.callTool({ name: "echo", arguments: { text: "ping" } }),
      },
      {
        key: "mcpProxy",
        name: "client → mcp-proxy CLI → child",
        pid: mp.proc!.pid,
        call: () => mp.client.callTool({ name: "echo", arguments: { text: "ping" } }),
      },
      { key: "broker", name: "client → slaude-connect serve → child", pid: b.proc.pid, call: me.call },
      {
        key: "brokerModern",
        name: "2026-07-28 client → slaude-connect serve → child",
        pid: b.proc.pid,
        call: modern.call,
      },
    ],
    P.rounds,
    P.n,
    P.warmup,
  );
  brokerCalls += P.warmup + P.rounds * P.n;
  figures.latency = lat;
  say();
  say(`warm call latency, HTTP in, ${lat.rounds} rotated rounds of ${P.n} calls (ms; per-round p50 median (min–max))`);
  for (const [k, v] of Object.entries(lat.perPath))
    say(
      `  ${k.padEnd(12)} p50 ${showSpread(v.p50, "", 3)}   p99 ${showSpread(v.p99, "", 3)}${v.cpuMsPerCall ? `   server CPU ${showSpread(v.cpuMsPerCall, " ms/call", 3)}` : ""}`,
    );
  say(`  broker ÷ bare pass-through   ${showSpread(lat.ratios.brokerOverBare)}`);
  say(`  broker ÷ mcp-proxy           ${showSpread(lat.ratios.brokerOverMcpProxy)}`);
  say(`  bare ÷ direct                ${showSpread(lat.ratios.bareOverDirect)}`);
  say(`  server CPU per call, broker ÷ bare ${showSpread(lat.ratios.brokerCpuOverBare)}`);
  say(`  server CPU per call, broker 2026-07-28 ÷ bare ${showSpread(lat.ratios.modernCpuOverBare)} (reported)`);
  say(`  broker, 2026-07-28 ÷ 2025-11-25 ${showSpread(lat.ratios.modernOverBroker)} (same broker and turn; reported)`);
  targets.push(ratioTarget("warm mcp_call p50 ÷ bare pass-through", lat.ratios.brokerOverBare, "<=", 1.1));
  targets.push(ratioTarget("server CPU per warm call ÷ bare pass-through", lat.ratios.brokerCpuOverBare, "<=", 1.3));
  targets.push(ratioTarget("warm mcp_call p50 ÷ mcp-proxy", lat.ratios.brokerOverMcpProxy, "<=", 0.7));

  // What one warm call costs the store: statements and write transactions, read from /metrics.
  const dbBefore = await b.metrics();
  const dbCalls = quick ? 100 : 500;
  for (let i = 0; i < dbCalls; i++) await me.call();
  brokerCalls += dbCalls;
  const dbAfter = await b.metrics();
  const perCall = (name: string) => (metricValue(dbAfter, name) - metricValue(dbBefore, name)) / dbCalls;
  const db = {
    statementsPerCall: perCall("slaude_db_statements_total"),
    transactionsPerCall: perCall("slaude_db_transactions_total"),
    calls: dbCalls,
  };
  figures.db = db;
  say(
    `  SQLite statements per warm call ${db.statementsPerCall.toFixed(2)}, write transactions per warm call ${db.transactionsPerCall.toFixed(2)} (${dbCalls} calls, one client)`,
  );

  progress("throughput");
  const tpDbBefore = await b.metrics();
  const tp = await throughput(bareTp.callers, brokerTp.callers, P.tpRounds, 8, P.tpPerWorker);
  const tpDbAfter = await b.metrics();
  const tpCalls = brokerTp.callers.length + P.tpRounds * 8 * P.tpPerWorker;
  const tpPerCall = (name: string) => (metricValue(tpDbAfter, name) - metricValue(tpDbBefore, name)) / tpCalls;
  brokerCalls += brokerTp.callers.length + P.tpRounds * 8 * P.tpPerWorker;
  figures.throughput = tp;
  say();
  say(`throughput, 8 workers over 50 connections (50 live children each side), ${P.tpRounds} alternating rounds`);
  say(`  bare     ${showSpread(tp.bare.callsPerSec, " calls/s", 0)}   p99 ${showSpread(tp.bare.p99, " ms", 1)}`);
  say(
    `  broker   ${showSpread(tp.broker.callsPerSec, " calls/s", 0)}   p99 ${showSpread(tp.broker.p99, " ms", 1)}   errors ${tp.errors}`,
  );
  say(
    `  SQLite per broker call under 8 workers: ${tpPerCall("slaude_db_statements_total").toFixed(2)} statements, ${tpPerCall("slaude_db_transactions_total").toFixed(2)} write transactions`,
  );
  figures.throughputDb = {
    statementsPerCall: tpPerCall("slaude_db_statements_total"),
    transactionsPerCall: tpPerCall("slaude_db_transactions_total"),
  };
  targets.push(ratioTarget("throughput ÷ bare pass-through", tp.ratio, ">=", 0.9));

  // Top up to the memory figure's call count, then the listing.
  for (; brokerCalls < P.calls; brokerCalls++) await me.call();
  rss.after10kCalls = rssMb(b.proc.pid);
  const list = await timeCalls(() => me.client.callTool({ name: "connections_list", arguments: {} }), P.lists);
  rss.afterLists = rssMb(b.proc.pid);
  figures.memory = {
    storedConnections: P.stored,
    liveChildren: tpUsers.length + 1,
    calls: brokerCalls,
    rssMb: rss,
    listMs: list,
  };
  say();
  say(`broker RSS (children excluded) with ${P.stored} stored connections and ${tpUsers.length + 1} live children`);
  say(
    `  after warm-up ${rss.afterWarmup!.toFixed(0)} MB, after ${brokerCalls} calls ${rss.after10kCalls!.toFixed(0)} MB, after ${P.lists} connections_list ${rss.afterLists!.toFixed(0)} MB`,
  );
  targets.push(
    target(
      `broker RSS, ${P.stored} connections, 50 children`,
      rss.afterLists!,
      "<=",
      150,
      `${rss.afterLists!.toFixed(0)} MB`,
      " MB",
    ),
  );

  progress("cold first call");
  const c = await cold(b, coldUsers, tmp);
  figures.cold = c;
  say();
  say(
    `cold first call (ms, ${P.cold} pairs): vendor's own spawn+initialize+call ${showSpread(c.vendor, "", 1)}, broker ${showSpread(c.broker, "", 1)}`,
  );
  targets.push(
    target(
      "cold first call − vendor's own spawn+initialize",
      c.extra.median,
      "<=",
      20,
      showSpread(c.extra, " ms", 1),
      " ms",
    ),
  );

  progress("approval round trip");
  const appr = await approvalRoundTrip(
    fake,
    b,
    signingSecret,
    borrow.thread,
    borrow.owner,
    borrow.borrower,
    P.approvals,
  );
  figures.approval = appr;
  say();
  say(`Slack approval click → resumed call's result (ms, ${P.approvals} rounds): ${showSpread(appr, "", 1)}`);
  for (const f of closers.splice(0).reverse()) await f();
  await b.stop();
  broker = undefined;

  progress(`scale: seeding ${P.scaleRows.join(" and ")} connections`);
  const sc = await scale(
    fake,
    [path.join(tmp, "small"), path.join(tmp, "large")],
    signingSecret,
    P.scaleRows,
    P.scaleRounds,
    P.scaleN,
  );
  figures.scale = sc;
  say();
  say(`stored connections ${sc.small} vs ${sc.large} (seeded in ${sc.seedSeconds.toFixed(0)} s), p50 ms small / large`);
  say(
    `  shared fallback   ${ms(sc.p50.small.shared)} ${ms(sc.p50.large.shared)}   ratio ${showSpread(sc.sharedRatio)}`,
  );
  say(
    `  borrowed (grant)  ${ms(sc.p50.small.borrowed)} ${ms(sc.p50.large.borrowed)}   ratio ${showSpread(sc.borrowedRatio)}`,
  );
  say(`  connections_list  ${ms(sc.p50.small.list)} ${ms(sc.p50.large.list)}`);
  targets.push(ratioTarget(`shared call at ${sc.large} ÷ at ${sc.small} connections`, sc.sharedRatio, "<=", 1.2));
  targets.push(ratioTarget(`borrowed call at ${sc.large} ÷ at ${sc.small} connections`, sc.borrowedRatio, "<=", 1.2));
  targets.push(
    target(
      `connections_list p50 at ${sc.large} connections`,
      sc.p50.large.list,
      "<=",
      10,
      `${sc.p50.large.list.toFixed(2)} ms`,
      " ms",
    ),
  );

  progress("overload");
  const ov = await overload(fake, path.join(tmp, "overload"), signingSecret, P.overload);
  figures.overload = ov;
  say();
  say(
    `overload: 16 busy connections, pool cap 4, ${ov.calls} calls of 20 ms: ${ov.spawns} spawns (${ov.spawnsPerCall.toFixed(2)} per call), p50 ${ov.p50.toFixed(0)} ms, p99 ${ov.p99.toFixed(0)} ms, errors ${ov.errors}`,
  );

  progress("replicas: SQLite vs PostgreSQL, 1 vs 3 replicas");
  const rp = await replicaBench(
    fake,
    path.join(tmp, "replicas"),
    signingSecret,
    "C0REPLICAS",
    quick
      ? { rounds: 3, n: 30, warmup: 10, tpRounds: 2, workers: 6, perWorker: 15, users: 6 }
      : { rounds: 8, n: 200, warmup: 50, tpRounds: 4, workers: 12, perWorker: 80, users: 12 },
  );
  figures.replicas = rp;
  say();
  say(`warm mcp_call, SQLite vs PostgreSQL (each broker its own process; ${rp.warm.ratio.n} rotated rounds; p50 ms)`);
  say(
    `  SQLite ${showSpread(rp.warm.sqliteP50, "", 3)}   PostgreSQL ${showSpread(rp.warm.postgresP50, "", 3)}   PostgreSQL ÷ SQLite ${showSpread(rp.warm.ratio)}`,
  );
  say(
    `  PostgreSQL statements per warm call ${rp.warm.postgresDb.statementsPerCall.toFixed(2)}, transactions ${rp.warm.postgresDb.transactionsPerCall.toFixed(2)}`,
  );
  targets.push(ratioTarget("warm mcp_call, PostgreSQL ÷ SQLite", rp.warm.ratio, "<=", 1.5));
  const rt = rp.throughput;
  say(
    `throughput on PostgreSQL, 1 vs 3 replicas (a client per replica, directly; ${rt.ratio.n} alternating rounds; errors ${rt.errors})`,
  );
  say(
    `  1 replica  ${showSpread(rt.one, " calls/s", 0)}   p99 ${showSpread(rt.p99.one, " ms", 1)}   broker CPU ${showSpread(rt.cpuMsPerCall.one, " ms/call", 3)}`,
  );
  say(
    `  3 replicas ${showSpread(rt.three, " calls/s", 0)}   p99 ${showSpread(rt.p99.three, " ms", 1)}   broker CPU ${showSpread(rt.cpuMsPerCall.three, " ms/call", 3)}`,
  );
  say(
    `  3 ÷ 1 ${showSpread(rt.ratio)}; per replica CPU per call it served: ${rt.perReplicaCpuMsPerCall.map((x) => x.median.toFixed(3)).join(" / ")} ms (${os.cpus().length} CPUs)`,
  );

  const hy = hygiene(5_000_000, quick ? 5 : 20);
  figures.hygiene = hy;
  say();
  say(`result hygiene of a ${(hy.bytes / 1e6).toFixed(0)} MB result (ms): ${showSpread(hy.ms, "", 2)}`);
  targets.push(target("hygiene of a 5 MB result", hy.ms.median, "<=", 5, `${hy.ms.median.toFixed(2)} ms`, " ms"));

  progress("login live view (real Chromium on both sides)");
  const lg = await measureLogin({ runs: quick ? 3 : 8, modes: ["warm", "cold"] });
  figures.login = lg;
  say();
  say(`login live view, ${lg.runs} logins per mode, spare browser on (ms from the link's goto; p50)`);
  for (const [mode, limit] of [
    ["warm", 450],
    ["cold", 800],
  ] as const) {
    const x = lg.modes[mode];
    if (!x) continue;
    const split = Object.entries(x.split)
      .sort((a, b) => (a[1] ?? 0) - (b[1] ?? 0))
      .map(([k, v]) => `${k} ${v?.toFixed(0)}`)
      .join(", ");
    say(
      `  ${mode} viewer page: first frame drawn ${x.firstFrame.p50.toFixed(0)} (${x.firstFrame.min.toFixed(0)}–${x.firstFrame.max.toFixed(0)}), blank first frames ${x.blankFirstFrames}/${x.firstFrame.n}`,
    );
    say(`    split: ${split}`);
    say(
      `    input → changed frame ${x.inputIdle.p50.toFixed(0)} idle (n=${x.inputIdle.n}), ${x.inputRefilling.p50.toFixed(0)} while the spare refills (n=${x.inputRefilling.n})`,
    );
    const f = `${x.firstFrame.p50.toFixed(0)} ms`;
    targets.push(target(`login first frame p50, ${mode} viewer page`, x.firstFrame.p50, "<=", limit, f, " ms"));
    targets.push(
      target(`login blank first frames, ${mode} viewer page`, x.blankFirstFrames, "<=", 0, `${x.blankFirstFrames}`),
    );
    // The worse of the two: the target holds whether or not the spare is refilling.
    const worst = Math.max(x.inputIdle.p50, Number.isNaN(x.inputRefilling.p50) ? 0 : x.inputRefilling.p50);
    targets.push(
      target(`login input → frame p50, refill or not, ${mode}`, worst, "<=", 60, `${worst.toFixed(0)} ms`, " ms"),
    );
  }

  say();
  say("targets (issues 13 and 25)");
  for (const t of targets) say(`  ${showTarget(t)}`);
  if (abortWarnings() > 0)
    say(
      `  (${abortWarnings()} MaxListenersExceededWarning from the SDK HTTP client's shared AbortSignal, not printed)`,
    );
  figures.targets = targets;
  if (jsonOut) writeFileSync(jsonOut, JSON.stringify(figures, null, 2));
} finally {
  for (const f of closers.reverse()) await f().catch(() => {});
  await broker?.stop();
  await fake.close();
  rmSync(tmp, { recursive: true, force: true });
}
