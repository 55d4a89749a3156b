// npm run bench:memory [-- --calls N] [--stored N] [--modern] [--node-arg FLAG ...]: the bench's memory figure alone
// (bench/run.ts, "broker RSS, 10,000 connections, 50 children"): 10,000 stored connections, 51 live
// children, throughput over the 50 then one client up to N calls, 20 connections_list; then the broker's
// memory breakdown: process.memoryUsage() and V8 heap spaces from inside (bench/lib/mem-probe.mjs),
// /proc/<pid>/status and smaps_rollup from outside.
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startFakeSlack } from "../test/fixtures/slack/fake-slack-api.js";
import { cliAdd, launchBroker, others, seed } from "./lib/broker-proc.js";
import { countClientAbortWarnings } from "./lib/client-warnings.js";
import { cpuMs, rssMb } from "./lib/procs.js";
import { brokerCaller, brokerModernCaller } from "./sections/latency.js";
import { brokerCallers } from "./sections/throughput.js";
import { usersWithThreads } from "./sections/users.js";

const args = process.argv.slice(2);
const opt = (name: string, dflt: string) => (args.includes(name) ? args[args.indexOf(name) + 1]! : dflt);
const calls = Number(opt("--calls", "10000"));
const stored = Number(opt("--stored", "10000"));
// --snapshots DIR: a heap snapshot at each probe, written to DIR (for a retainers comparison).
const snapshotDir = args.includes("--snapshots") ? path.resolve(opt("--snapshots", ".")) : undefined;
// --heap-prof DIR: V8's sampling heap profile of promoted-then-dead and live objects, one per probe, to DIR.
const heapProfDir = args.includes("--heap-prof") ? path.resolve(opt("--heap-prof", ".")) : undefined;
// --modern: the single client's calls alternate with a 2026-07-28 client's (the full bench's latency section does).
const modernShare = args.includes("--modern");
const nodeArgs = args.flatMap((a, i) => (args[i - 1] === "--node-arg" ? [a] : []));
const abortWarnings = countClientAbortWarnings();

const PROBE = fileURLToPath(new URL("./lib/mem-probe.mjs", import.meta.url));
const tmp = mkdtempSync(path.join(os.tmpdir(), "slaude-mem-"));
const probeFile = path.join(tmp, "mem.json");
const fake = await startFakeSlack({ admins: [] });
const team = fake.teamId;
const alice = { user: "U0ALICE", thread: { teamId: team, channelId: "C0BENCH", threadTs: "1700000000.000001" } };
const tp = usersWithThreads(team, "C0BENCH", "UTP", 50, 1700000001);
fake.setMembers("C0BENCH", [alice.user, ...tp.map((u) => u.user)]);
const mb = (n: number) => (n / 1024 / 1024).toFixed(1);

async function probe(pid: number) {
  rmSync(probeFile, { force: true });
  process.kill(pid, "SIGUSR2");
  for (let i = 0; i < 3000 && !existsSync(probeFile); i++) await new Promise((r) => setTimeout(r, 20));
  return JSON.parse(readFileSync(probeFile, "utf8")) as {
    mem: NodeJS.MemoryUsage;
    heap: Record<string, number>;
    spaces: Record<string, { size: number; used: number }>;
    afterGc?: { mem: NodeJS.MemoryUsage; spaces: Record<string, { size: number; used: number }> };
  };
}

function procFields(pid: number, file: string, names: readonly string[]): string {
  const text = readFileSync(`/proc/${pid}/${file}`, "utf8");
  return names
    .map((n) => {
      const m = new RegExp(`^${n}:\\s+(\\d+) kB`, "m").exec(text);
      return `${n} ${m ? (Number(m[1]) / 1024).toFixed(1) : "?"}`;
    })
    .join(", ");
}

const b = await launchBroker(
  {
    dir: path.join(tmp, "broker"),
    slack: { apiUrl: fake.apiUrl, botToken: fake.botToken, signingSecret: `s-${randomBytes(8).toString("hex")}` },
    env: {
      BENCH_MEM_PROBE_FILE: probeFile,
      ...(snapshotDir ? { BENCH_MEM_SNAPSHOT_DIR: snapshotDir } : {}),
      ...(heapProfDir ? { BENCH_MEM_HEAP_PROF_DIR: heapProfDir } : {}),
    },
    nodeArgs: [...nodeArgs, "--import", PROBE],
  },
  async (env) => {
    await cliAdd(env, { team, scope: "user", owner: alice.user, token: "alice-token" });
    await seed(env, team, [...others(team, stored), ...tp.map((u) => ({ owner: u.user }))]);
  },
);
try {
  const show = async (when: string) => {
    const p = await probe(b.proc.pid);
    const m = p.mem;
    console.log(
      `${when}: rss ${mb(m.rss)} MB, heapTotal ${mb(m.heapTotal)}, heapUsed ${mb(m.heapUsed)}, external ${mb(m.external)}, arrayBuffers ${mb(m.arrayBuffers)}`,
    );
    console.log(
      `  spaces (size/used MB): ${Object.entries(p.spaces)
        .map(([k, v]) => `${k.replace("_space", "")} ${mb(v.size)}/${mb(v.used)}`)
        .join(", ")}`,
    );
    console.log(`  malloced ${mb(p.heap.malloced_memory!)} (peak ${mb(p.heap.peak_malloced_memory!)})`);
    console.log(`  status: ${procFields(b.proc.pid, "status", ["VmRSS", "RssAnon", "RssFile", "VmHWM", "VmData"])}`);
    console.log(
      `  smaps_rollup: ${procFields(b.proc.pid, "smaps_rollup", ["Rss", "Pss", "Private_Dirty", "Anonymous", "Shared_Clean"])}`,
    );
    if (p.afterGc)
      console.log(
        `  after a full GC: rss ${mb(p.afterGc.mem.rss)}, heapUsed ${mb(p.afterGc.mem.heapUsed)}, old ${mb(p.afterGc.spaces.old_space!.size)}/${mb(p.afterGc.spaces.old_space!.used)}`,
      );
    return p;
  };
  await show("started");
  const me = await brokerCaller(b, alice.thread, alice.user);
  const modern = modernShare ? await brokerModernCaller(b, alice.thread, alice.user) : undefined;
  const t = await brokerCallers(b, tp);
  for (const c of t.callers) await c();
  await me.call();
  await show("51 children warm");
  let n = t.callers.length + 1;
  const cpu0 = cpuMs(b.proc.pid);
  const n0 = n;
  // 8 workers over the 50 children, as the throughput section does (4 rounds × 8 × 125).
  const perWorker = Math.min(500, Math.floor((calls - n) / 8 / 2));
  await Promise.all(
    Array.from({ length: 8 }, async (_, k) => {
      for (let i = 0; i < perWorker; i++) await t.callers[(k + i * 8) % t.callers.length]!();
    }),
  );
  n += 8 * perWorker;
  await show(`after the 8 workers' ${8 * perWorker} calls`);
  for (; n < calls; n++) await (modern && n % 2 ? modern.call() : me.call());
  const cpuPerCall = (cpuMs(b.proc.pid) - cpu0) / (n - n0);
  await show(`after ${n} calls`);
  for (let i = 0; i < 20; i++) await me.client.callTool({ name: "connections_list", arguments: {} });
  const p = await show("after 20 connections_list");
  console.log(`RSS ${rssMb(b.proc.pid).toFixed(0)} MB (VmRSS; the bench's figure), heap ${mb(p.mem.heapUsed)} MB used`);
  console.log(
    `broker CPU ${cpuPerCall.toFixed(3)} ms per call over the ${n - n0} calls; load ${os.loadavg()[0]!.toFixed(1)}`,
  );
  console.log(`bench client MaxListenersExceededWarning: ${abortWarnings()}`);
  await Promise.all(
    [me.client, ...(modern ? [modern.client] : []), ...t.clients].map((c) => c.close().catch(() => {})),
  );
} finally {
  await b.stop();
  await fake.close?.();
  rmSync(tmp, { recursive: true, force: true });
}
