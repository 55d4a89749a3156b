// Throughput: 8 workers over 50 connections (50 live children), the broker against the bare
// pass-through, alternating round by round; the ratio of calls/s per round.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { ThreadRef } from "../../src/domain/thread.js";
import type { BrokerProc } from "../lib/broker-proc.js";
import { httpClient } from "../lib/procs.js";
import { pct, type Spread, spread } from "../lib/stats.js";

export interface ThroughputResult {
  readonly bare: { callsPerSec: Spread; p99: Spread };
  readonly broker: { callsPerSec: Spread; p99: Spread };
  readonly ratio: Spread;
  readonly errors: number;
  readonly calls: number;
}

type Caller = () => Promise<unknown>;

/** 50 sessions on the bare proxy: one child each. */
export async function bareCallers(url: string, n: number): Promise<{ callers: Caller[]; clients: Client[] }> {
  const clients: Client[] = [];
  for (let i = 0; i < n; i++) clients.push(await httpClient(`${url}/mcp`));
  return { clients, callers: clients.map((c) => () => c.callTool({ name: "echo", arguments: { text: "ping" } })) };
}

/** 50 broker sessions, one thread each with its user's turn; each call runs on that user's own connection. */
export async function brokerCallers(
  b: BrokerProc,
  threads: readonly { thread: ThreadRef; user: string }[],
): Promise<{ callers: Caller[]; clients: Client[] }> {
  const clients: Client[] = [];
  for (const t of threads) {
    await b.turn(t.thread, t.user);
    clients.push(await b.session(t.thread));
  }
  const callers = clients.map((c, i) => async () => {
    const r = await c.callTool({
      name: "mcp_call",
      arguments: { service: "echo", tool: "echo", args: { text: "ping" }, on_behalf_of: threads[i]!.user },
    });
    if (r.isError || (r.structuredContent as { ranAs?: string } | undefined)?.ranAs !== "own")
      throw new Error(`broker call failed: ${JSON.stringify(r.content)}`);
    return r;
  });
  return { clients, callers };
}

/** `workers` loops, worker k calling callers k, k+workers, … `perWorker` times. */
async function run(
  callers: readonly Caller[],
  workers: number,
  perWorker: number,
): Promise<{ perSec: number; p99: number; errors: number }> {
  const lat: number[] = [];
  let errors = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: workers }, async (_, k) => {
      for (let i = 0; i < perWorker; i++) {
        const t = performance.now();
        try {
          await callers[(k + i * workers) % callers.length]!();
        } catch {
          errors++;
        }
        lat.push(performance.now() - t);
      }
    }),
  );
  return { perSec: (workers * perWorker) / ((performance.now() - t0) / 1000), p99: pct(lat, 99), errors };
}

export async function throughput(
  bareC: readonly Caller[],
  brokerC: readonly Caller[],
  rounds: number,
  workers: number,
  perWorker: number,
): Promise<ThroughputResult> {
  // Warm every child on both sides first: throughput measures calls, not spawns.
  for (const c of [...bareC, ...brokerC]) await c();
  const b: { perSec: number; p99: number }[] = [];
  const k: { perSec: number; p99: number }[] = [];
  let errors = 0;
  for (let r = 0; r < rounds; r++) {
    const pairs: [readonly Caller[], { perSec: number; p99: number }[]][] =
      r % 2 === 0
        ? [
            [bareC, b],
            [brokerC, k],
          ]
        : [
            [brokerC, k],
            [bareC, b],
          ];
    for (const [callers, out] of pairs) {
      const x = await run(callers, workers, perWorker);
      errors += x.errors;
      out.push(x);
    }
  }
  return {
    bare: { callsPerSec: spread(b.map((x) => x.perSec)), p99: spread(b.map((x) => x.p99)) },
    broker: { callsPerSec: spread(k.map((x) => x.perSec)), p99: spread(k.map((x) => x.p99)) },
    ratio: spread(k.map((x, i) => x.perSec / b[i]!.perSec)),
    errors,
    calls: 2 * rounds * workers * perWorker + bareC.length + brokerC.length,
  };
}
