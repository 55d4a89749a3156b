// CPU profile of the broker's warm mcp_call: starts `serve` with --cpu-prof, makes N warm calls
// from one SDK client, stops the broker gracefully and prints where its CPU went (the per-call
// budget by stage, then self time by file and by function). Noise shifts totals, not the split, so
// this runs on a busy machine too.
//   npm run bench:profile -- [calls=3000] [outDir] [--modern | --bare] [--gc]
//   --modern: a 2026-07-28 client, no session; --bare: the bench's bare SDK pass-through instead of
//   the broker, profiled the same way (the floor's budget, stage by stage); --gc: no CPU profile,
//   V8's collection trace instead (what the calls allocate, how often and how long it collects)
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Readable } from "node:stream";
import { startFakeSlack } from "../test/fixtures/slack/fake-slack-api.js";
import { cliAdd, ECHO_VENDOR, launchBroker, ROOT } from "./lib/broker-proc.js";
import { countClientAbortWarnings } from "./lib/client-warnings.js";
import { GcTrace } from "./lib/gc-trace.js";
import { freePort, httpClient, startProc, waitForHttp } from "./lib/procs.js";
import {
  budgetLines,
  frameName,
  indexProfile,
  type Profile,
  shortUrl,
  stageBudget,
  validationByCaller,
} from "./lib/profile-stages.js";
import { brokerCaller, brokerModernCaller } from "./sections/latency.js";

// The bench client's own abort-listener warnings (bench/lib/client-warnings.ts): counted, not printed.
const clientWarnings = countClientAbortWarnings();
const modernEra = process.argv.includes("--modern");
const bareProxy = process.argv.includes("--bare");
const gcOnly = process.argv.includes("--gc");
const positional = process.argv.slice(2).filter((a) => !a.startsWith("--"));
const calls = Number(positional[0] ?? 3000);
const profDir = positional[1] ?? mkdtempSync(path.join(os.tmpdir(), "slaude-prof-"));
const PROFILE = gcOnly ? ["--trace-gc-nvp"] : ["--cpu-prof", `--cpu-prof-dir=${profDir}`];

/** The profiled server and one warm call to it. */
interface Target {
  readonly what: string;
  /** The server's stdout (where `--trace-gc-nvp` prints). */
  readonly stdout: Readable;
  call(): Promise<unknown>;
  stop(): Promise<void>;
}

async function brokerTarget(): Promise<Target> {
  const tmp = mkdtempSync(path.join(os.tmpdir(), "slaude-prof-run-"));
  const fake = await startFakeSlack({ admins: [] });
  const team = fake.teamId;
  const alice = { user: "U0ALICE", thread: { teamId: team, channelId: "C0BENCH", threadTs: "1700000000.000001" } };
  fake.setMembers("C0BENCH", [alice.user]);
  const broker = await launchBroker(
    {
      dir: path.join(tmp, "broker"),
      slack: { apiUrl: fake.apiUrl, botToken: fake.botToken, signingSecret: "prof-signing" },
      nodeArgs: PROFILE,
    },
    (env) => cliAdd(env, { team, scope: "user", owner: alice.user, token: "alice-token" }),
  );
  // The 2026-07-28 caller reuses the thread's live turn: report it first (brokerCaller does so itself).
  if (modernEra) await broker.turn(alice.thread, alice.user);
  const me = await (modernEra ? brokerModernCaller : brokerCaller)(broker, alice.thread, alice.user);
  return {
    what: `broker, ${modernEra ? "2026-07-28" : "2025-11-25"} era`,
    stdout: broker.proc.child.stdout!,
    call: me.call,
    stop: async () => {
      await me.client.close();
      await broker.stop();
      await fake.close();
    },
  };
}

async function bareTarget(): Promise<Target> {
  const port = await freePort();
  // The pass-through has no signal handler of its own: exit cleanly on SIGINT so the profile is written.
  const onInt = 'data:text/javascript,process.on("SIGINT",()=>process.exit(0))';
  const bare = path.join(ROOT, "bench/servers/bare-proxy.mjs");
  const proc = startProc(
    process.execPath,
    [...PROFILE, "--import", onInt, bare, String(port), ECHO_VENDOR],
    { PATH: process.env.PATH ?? "" },
    ROOT,
  );
  await waitForHttp(`http://127.0.0.1:${port}/ping`, proc);
  const client = await httpClient(`http://127.0.0.1:${port}/mcp`);
  return {
    what: "bare SDK pass-through",
    stdout: proc.child.stdout!,
    call: () => client.callTool({ name: "echo", arguments: { text: "ping" } }),
    stop: async () => {
      await client.close();
      const exited = new Promise((r) => proc.child.once("exit", r));
      proc.child.kill("SIGINT");
      await exited;
    },
  };
}

const target = await (bareProxy ? bareTarget() : brokerTarget());
const gc = new GcTrace(target.stdout);
for (let i = 0; i < 200; i++) await target.call();
gc.counting = true;
const t0 = performance.now();
for (let i = 0; i < calls; i++) await target.call();
const ms = performance.now() - t0;
gc.counting = false;
await target.stop();
process.stdout.write(`${calls} warm calls (${target.what}), ${(ms / calls).toFixed(3)} ms/call wall\n`);
if (clientWarnings() > 0)
  process.stdout.write(
    `  (${clientWarnings()} MaxListenersExceededWarning from the bench client's shared AbortSignal, not printed)\n`,
  );

if (gcOnly) {
  process.stdout.write(`${gc.summary(calls)}\n`);
  process.exit(0);
}

const file = readdirSync(profDir)
  .filter((f) => f.endsWith(".cpuprofile"))
  .map((f) => path.join(profDir, f))
  .sort()
  .at(-1)!;
const prof = indexProfile(JSON.parse(readFileSync(file, "utf8")) as Profile);
let busy = 0;
const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
const fns = new Map<string, number>();
const files = new Map<string, number>();
for (const [id, us] of prof.self) {
  const f = prof.byId.get(id)!.callFrame;
  if (f.functionName === "(idle)") continue;
  busy += us;
  add(fns, frameName(f), us);
  add(files, shortUrl(f.url) || f.functionName, us);
}
const show = (m: Map<string, number>, n: number) =>
  [...m.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, v]) => `  ${((v / busy) * 100).toFixed(1).padStart(5)}%  ${(v / 1000 / calls).toFixed(3)} ms/call  ${k}`)
    .join("\n");
const stages = stageBudget(prof);
const budget = budgetLines(stages, busy, calls);
const validation = validationByCaller(prof);
process.stdout.write(
  `busy CPU of the whole run (start-up and 200 warm-up calls included) ÷ ${calls} calls: ${(busy / 1000 / calls).toFixed(3)} ms/call (profile ${file})\n\nby stage (the per-call budget):\n${budget}\n\nvalidation (zod) by the function that asked:\n${show(validation, 12)}\n\nby file:\n${show(files, 30)}\n\nby function:\n${show(fns, 40)}\n`,
);
