// Where a warm call's wall time goes besides the server's CPU: the bare pass-through and the broker
// side by side, rounds rotated: each round's p50, the server's CPU per call (from /proc) and this
// client process's own CPU per call (process.cpuUsage), and each path's p50 and CPU ÷ bare per
// round. With `--base DIR` a broker built from another checkout (its dist/ built) runs beside this
// one, for an A/B of a change. Usage: npm run build && tsx bench/client-ab.ts [--base DIR]
// [--rounds 10] [--calls 300] [NODE_FLAG ...] (node flags for the brokers, after npm start's).
import { randomBytes } from "node:crypto";
import os from "node:os";
import path from "node:path";
import { startFakeSlack } from "../test/fixtures/slack/fake-slack-api.js";
import { brokerEnv, cliAdd, startBroker } from "./lib/broker-proc.js";
import { countClientAbortWarnings } from "./lib/client-warnings.js";
import { cpuMs, freePort } from "./lib/procs.js";
import { pct, showSpread, spread, timeCalls } from "./lib/stats.js";
import { bare, brokerCaller } from "./sections/latency.js";

countClientAbortWarnings();
const argv = process.argv.slice(2);
const opt = (name: string): string | undefined => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv.splice(i, 2)[1] : undefined;
};
const base = opt("base");
const rounds = Number(opt("rounds") ?? 10);
// Calls per path per round: /proc counts CPU in 10 ms ticks, so 300 calls resolve 0.03 ms a call.
const n = Number(opt("calls") ?? 300);
const fake = await startFakeSlack({ admins: [] });
const team = fake.teamId;
const thread = { teamId: team, channelId: "C0CLAB", threadTs: "1700000400.000001" };
fake.setMembers("C0CLAB", ["U0CLAB"]);
const slack = { apiUrl: fake.apiUrl, botToken: fake.botToken, signingSecret: randomBytes(16).toString("hex") };
const env = brokerEnv({ dir: path.join(os.tmpdir(), `slaude-client-ab-${process.pid}`), slack }, await freePort());
await cliAdd(env, { team, scope: "user", owner: "U0CLAB", token: "tok" });
const b = await startBroker(env, argv);
const me = await brokerCaller(b, thread, "U0CLAB");
/** The broker built in `root`, with the same connection and thread as this checkout's. */
async function brokerOf(root: string) {
  const e = brokerEnv({ dir: path.join(os.tmpdir(), `slaude-client-ab-base-${process.pid}`), slack }, await freePort());
  await cliAdd(e, { team, scope: "user", owner: "U0CLAB", token: "tok" });
  return startBroker(e, argv, path.join(root, "bin/slaude-connect.js"));
}
const bb = base ? await brokerOf(base) : undefined;
const meBase = bb ? await brokerCaller(bb, thread, "U0CLAB") : undefined;
const ba = await bare();
const paths = [
  { label: "bare", pid: ba.proc!.pid, call: () => ba.client.callTool({ name: "echo", arguments: { text: "ping" } }) },
  { label: "broker", pid: b.proc.pid, call: me.call },
  ...(bb && meBase ? [{ label: "base", pid: bb.proc.pid, call: meBase.call }] : []),
];
for (const p of paths) console.log(p.label, JSON.stringify(await p.call()).length, "bytes of result");
const r = paths.map(() => ({ p50: [] as number[], server: [] as number[], client: [] as number[] }));
for (const p of paths) await timeCalls(p.call, 200);
for (let k = 0; k < rounds; k++)
  for (let j = 0; j < paths.length; j++) {
    const i = (j + k) % paths.length;
    const p = paths[i]!;
    const s0 = cpuMs(p.pid);
    const c0 = process.cpuUsage();
    r[i]!.p50.push(pct(await timeCalls(p.call, n), 50));
    const c = process.cpuUsage(c0);
    r[i]!.server.push((cpuMs(p.pid) - s0) / n);
    r[i]!.client.push((c.user + c.system) / 1000 / n);
  }
console.log(`load ${os.loadavg()[0]!.toFixed(1)}`);
for (const [i, p] of paths.entries())
  console.log(
    `${p.label.padEnd(7)} p50 ${showSpread(spread(r[i]!.p50), " ms", 3)}  server CPU ${showSpread(spread(r[i]!.server), " ms", 3)}  client CPU ${showSpread(spread(r[i]!.client), " ms", 3)}`,
  );
/** Path `i` ÷ path `j`, round by round: p50 and server CPU. */
const perRound = (i: number, j: number): string => {
  const ratio = (a: number[], b: number[]) => showSpread(spread(a.map((x, k) => x / b[k]!)));
  return `p50 ${ratio(r[i]!.p50, r[j]!.p50)}  server CPU ${ratio(r[i]!.server, r[j]!.server)}`;
};
for (const [i, p] of paths.entries()) if (i > 0) console.log(`${p.label.padEnd(7)} ÷ bare: ${perRound(i, 0)}`);
if (bb) console.log(`broker  ÷ base: ${perRound(1, 2)}`);
await me.client.close();
await meBase?.client.close();
await bb?.stop();
await ba.close();
await b.stop();
await fake.close();
