// Side by side in one run: two SQLite brokers of this checkout, one started as `npm start` starts it
// (its node flags, and the heap growth `serve` sets itself: src/app/heap.ts) and one with V8's
// default heap settings (stated on the command line, so `serve` leaves them), rounds rotated. Each
// round: 300 warm calls from one client (CPU per call, from /proc, as the bench's latency section
// reads it), then 8 workers over 20 connections (the allocation pattern that grows the old
// generation). Prints CPU per call per round and their ratio, p50, and each broker's RSS at the end.
// Usage: npm run build && tsx bench/flags-ab.ts [--rounds 8 --n 300] [--node-arg FLAG ...] (FLAGs instead of npm start's)
import { randomBytes } from "node:crypto";
import os from "node:os";
import path from "node:path";
import { startFakeSlack } from "../test/fixtures/slack/fake-slack-api.js";
import { type BrokerProc, brokerEnv, ROOT, seed, startBroker, startFlags } from "./lib/broker-proc.js";
import { cpuMs, freePort, rssMb } from "./lib/procs.js";
import { pct, showSpread, spread, timeCalls } from "./lib/stats.js";
import { brokerCaller } from "./sections/latency.js";
import { brokerCallers } from "./sections/throughput.js";
import { usersWithThreads } from "./sections/users.js";

const args = process.argv.slice(2);
const opt = (name: string, dflt: string): string => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1]! : dflt;
};
const rounds = Number(opt("rounds", "8"));
const n = Number(opt("n", "300"));
const given = args.flatMap((a, i) => (args[i - 1] === "--node-arg" ? [a] : []));
// V8's defaults for what npm start and serve set, stated so they win (a later flag overrides an earlier one).
const defaults = ["--max-semi-space-size=0", "--heap-growing-percent=0"];
const flags = given.length ? given : startFlags(path.join(ROOT, "bin/slaude-connect.js"));

const fake = await startFakeSlack({ admins: [] });
const team = fake.teamId;
const channel = "C0FLAB";
const me = { user: "U0FLAB", thread: { teamId: team, channelId: channel, threadTs: "1700000300.000001" } };
const workers = usersWithThreads(team, channel, "UFW", 20, 1700000301);
fake.setMembers(channel, [me.user, ...workers.map((w) => w.user)]);
const slack = { apiUrl: fake.apiUrl, botToken: fake.botToken, signingSecret: randomBytes(16).toString("hex") };
const tmp = path.join(os.tmpdir(), `slaude-flags-ab-${process.pid}`);

interface Side {
  readonly label: string;
  readonly b: BrokerProc;
  call(): Promise<unknown>;
  readonly burst: (() => Promise<unknown>)[];
  close(): Promise<unknown>;
}

async function side(label: string, nodeArgs: readonly string[]): Promise<Side> {
  const env = brokerEnv({ dir: path.join(tmp, label), slack }, await freePort());
  await seed(
    env,
    team,
    [me, ...workers].map((w) => ({ owner: w.user })),
  );
  const b = await startBroker(env, nodeArgs);
  const one = await brokerCaller(b, me.thread, me.user);
  const many = await brokerCallers(b, workers);
  return {
    label,
    b,
    call: one.call,
    burst: many.callers,
    close: () => Promise.all([one.client, ...many.clients].map((c) => c.close().catch(() => {}))),
  };
}

const sides: Side[] = [];
try {
  // startBroker puts npm start's flags first: the defaults side resets them, the flags side adds the given ones.
  const label = given.length
    ? `flags ${given.join(" ")}`
    : `as npm start (${flags.join(" ") || "no flag"}; serve's heap setting)`;
  sides.push(await side(label, given.length ? [...defaults, ...given] : []), await side("V8 defaults", defaults));
  for (const s of sides) {
    await timeCalls(s.call, 100);
    for (const c of s.burst) await c();
  }
  const cpu: number[][] = sides.map(() => []);
  const p50: number[][] = sides.map(() => []);
  for (let r = 0; r < rounds; r++)
    for (let k = 0; k < sides.length; k++) {
      const i = (k + r) % sides.length;
      const s = sides[i]!;
      const c0 = cpuMs(s.b.proc.pid);
      p50[i]!.push(pct(await timeCalls(s.call, n), 50));
      cpu[i]!.push((cpuMs(s.b.proc.pid) - c0) / n);
      await Promise.all(
        Array.from({ length: 8 }, async (_, w) => {
          for (let j = 0; j < 60; j++) await s.burst[(w + j * 8) % s.burst.length]!();
        }),
      );
    }
  console.log(
    `load average ${os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(" ")}; ${rounds} rounds of ${n} calls, then 8 × 60 over ${workers.length} connections`,
  );
  for (const [i, s] of sides.entries())
    console.log(
      `${s.label}: CPU ${showSpread(spread(cpu[i]!), " ms/call", 3)}  p50 ${showSpread(spread(p50[i]!), " ms", 3)}  RSS ${rssMb(s.b.proc.pid).toFixed(0)} MB`,
    );
  console.log(`CPU per call, flags ÷ defaults ${showSpread(spread(cpu[0]!.map((x, r) => x / cpu[1]![r]!)))}`);
  console.log(`p50, flags ÷ defaults ${showSpread(spread(p50[0]!.map((x, r) => x / p50[1]![r]!)))}`);
} finally {
  for (const s of sides) {
    await s.close();
    await s.b.stop();
  }
  await fake.close();
}
