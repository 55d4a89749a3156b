// Warm call latency, every path HTTP in (except the direct floor) and in its own process, one
// client, the paths rotated round by round; ratios computed per round.
import path from "node:path";
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { ThreadRef } from "../../src/domain/thread.js";
import { type BrokerProc, ECHO_VENDOR, ROOT } from "../lib/broker-proc.js";
import { cpuMs, freePort, httpClient, type Proc, startProc, waitForHttp } from "../lib/procs.js";
import { pct, type Spread, spread, timeCalls } from "../lib/stats.js";

const MCP_PROXY_BIN = path.join(ROOT, "node_modules/mcp-proxy/dist/bin/mcp-proxy.mjs");
const BARE_PROXY = path.join(ROOT, "bench/servers/bare-proxy.mjs");
const ECHO = { text: "ping" };

/** One measured path: a name and one call. */
export interface PathUnderTest {
  readonly key: "direct" | "bare" | "mcpProxy" | "broker" | "brokerModern";
  readonly name: string;
  /** The server process whose CPU time a call of this path costs (none for the direct floor). */
  readonly pid?: number;
  call(): Promise<unknown>;
}

/** A server the bench started for a path, with its client. */
export interface Started {
  readonly client: Client;
  readonly proc?: Proc;
  close(): Promise<void>;
}

/** The direct floor: an SDK client over stdio to the vendor, no proxy at all. */
export async function direct(): Promise<Started> {
  const client = new Client({ name: "bench", version: "1" });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [ECHO_VENDOR],
      env: { PATH: process.env.PATH ?? "", VENDOR_TOKEN: "direct" },
      stderr: "ignore",
    }),
  );
  return { client, close: () => client.close() };
}

/** The bare SDK HTTP→stdio pass-through, its own process. */
export async function bare(): Promise<Started & { url: string }> {
  const port = await freePort();
  const proc = startProc(
    process.execPath,
    [BARE_PROXY, String(port), ECHO_VENDOR],
    { PATH: process.env.PATH ?? "" },
    ROOT,
  );
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/ping`, proc);
  const client = await httpClient(`${url}/mcp`);
  return {
    client,
    proc,
    url,
    close: async () => {
      await client.close().catch(() => {});
      await proc.stop();
    },
  };
}

/** mcp-proxy's CLI as people run it: its own process, Streamable HTTP, one stdio child. */
export async function mcpProxy(): Promise<Started> {
  const port = await freePort();
  const proc = startProc(
    process.execPath,
    [
      MCP_PROXY_BIN,
      "--port",
      String(port),
      "--host",
      "127.0.0.1",
      "--server",
      "stream",
      "--",
      process.execPath,
      ECHO_VENDOR,
    ],
    { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", VENDOR_TOKEN: "mcp-proxy" },
    ROOT,
  );
  await waitForHttp(`http://127.0.0.1:${port}/ping`, proc);
  const client = await httpClient(`http://127.0.0.1:${port}/mcp`);
  return {
    client,
    proc,
    close: async () => {
      await client.close().catch(() => {});
      await proc.stop();
    },
  };
}

/** A broker session in `thread` where `user`'s turn is reported and whose own connection answers. */
export async function brokerCaller(
  b: BrokerProc,
  thread: ThreadRef,
  user: string,
): Promise<{ client: Client; call(): Promise<unknown> }> {
  await b.turn(thread, user);
  const client = await b.session(thread);
  const call = async () => {
    const r = await client.callTool({
      name: "mcp_call",
      arguments: { service: "echo", tool: "echo", args: ECHO, on_behalf_of: user },
    });
    if (r.isError) throw new Error(`broker call failed: ${JSON.stringify(r.content)}`);
    return r;
  };
  return { client, call };
}

/**
 * The same broker, thread and turn in the 2026-07-28 era: an SDK v2 client pinned to the revision,
 * no initialize and no session, `X-Slaude-Thread` on every request, the turn the thread's live one.
 */
export async function brokerModernCaller(
  b: BrokerProc,
  thread: ThreadRef,
  user: string,
): Promise<{ client: ClientV2; call(): Promise<unknown> }> {
  const transport = new TransportV2(new URL(`${b.url}/mcp`), {
    requestInit: {
      headers: {
        Authorization: `Bearer ${b.hostToken}`,
        "X-Slaude-Thread": `${thread.teamId}/${thread.channelId}/${thread.threadTs}`,
      },
    },
  });
  const client = new ClientV2(
    { name: "bench-modern", version: "1" },
    { versionNegotiation: { mode: { pin: "2026-07-28" } } },
  );
  await client.connect(transport);
  const call = async () => {
    const r = await client.callTool({
      name: "mcp_call",
      arguments: { service: "echo", tool: "echo", args: ECHO, on_behalf_of: user },
    });
    if (r.isError) throw new Error(`broker 2026-07-28 call failed: ${JSON.stringify(r.content)}`);
    return r;
  };
  return { client, call };
}

export interface LatencyResult {
  readonly rounds: number;
  readonly perPath: Record<
    PathUnderTest["key"],
    { p50: Spread; p99: Spread; pooledP50: number; pooledP99: number; cpuMsPerCall?: Spread }
  >;
  readonly ratios: {
    brokerOverBare: Spread;
    brokerOverMcpProxy: Spread;
    bareOverDirect: Spread;
    brokerOverDirect: Spread;
    /** The 2026-07-28 era over the 2025 era: the same broker, thread and turn. */
    modernOverBroker: Spread;
    /** Server CPU time per warm call, the broker's process over the bare pass-through's. */
    brokerCpuOverBare: Spread;
    /** The same for the 2026-07-28 era. */
    modernCpuOverBare: Spread;
  };
  readonly calls: number;
}

/** Runs `rounds` rounds of `n` calls per path, rotating which path goes first each round. */
export async function latency(
  paths: readonly PathUnderTest[],
  rounds: number,
  n: number,
  warmup: number,
): Promise<LatencyResult> {
  for (const p of paths) await timeCalls(() => p.call(), warmup);
  const p50s = new Map<string, number[]>(paths.map((p) => [p.key, []]));
  const p99s = new Map<string, number[]>(paths.map((p) => [p.key, []]));
  const all = new Map<string, number[]>(paths.map((p) => [p.key, []]));
  const cpus = new Map<string, number[]>(paths.map((p) => [p.key, []]));
  let calls = paths.length * warmup;
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < paths.length; i++) {
      const p = paths[(r + i) % paths.length]!;
      const cpu0 = p.pid === undefined ? Number.NaN : cpuMs(p.pid);
      const samples = await timeCalls(() => p.call(), n);
      if (p.pid !== undefined) cpus.get(p.key)!.push((cpuMs(p.pid) - cpu0) / n);
      calls += n;
      p50s.get(p.key)!.push(pct(samples, 50));
      p99s.get(p.key)!.push(pct(samples, 99));
      all.get(p.key)!.push(...samples);
    }
  }
  const per = (k: string, j: number) => p50s.get(k)![j]!;
  const ratio = (a: string, b: string) => spread(Array.from({ length: rounds }, (_, j) => per(a, j) / per(b, j)));
  const cpuRatio = (a: string, b: string) =>
    spread(Array.from({ length: rounds }, (_, j) => cpus.get(a)![j]! / cpus.get(b)![j]!));
  const perPath = Object.fromEntries(
    paths.map((p) => [
      p.key,
      {
        p50: spread(p50s.get(p.key)!),
        p99: spread(p99s.get(p.key)!),
        pooledP50: pct(all.get(p.key)!, 50),
        pooledP99: pct(all.get(p.key)!, 99),
        ...(p.pid === undefined ? {} : { cpuMsPerCall: spread(cpus.get(p.key)!) }),
      },
    ]),
  ) as LatencyResult["perPath"];
  return {
    rounds,
    perPath,
    ratios: {
      brokerOverBare: ratio("broker", "bare"),
      brokerOverMcpProxy: ratio("broker", "mcpProxy"),
      bareOverDirect: ratio("bare", "direct"),
      brokerOverDirect: ratio("broker", "direct"),
      modernOverBroker: ratio("brokerModern", "broker"),
      brokerCpuOverBare: cpuRatio("broker", "bare"),
      modernCpuOverBare: cpuRatio("brokerModern", "bare"),
    },
    calls,
  };
}
