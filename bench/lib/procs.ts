// Processes for the bench: every server measured runs in its own process group, killed on exit.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import net, { type AddressInfo } from "node:net";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { readStat } from "../../src/proc/proc.js";

/** A server process the bench started. */
export interface Proc {
  readonly child: ChildProcess;
  readonly pid: number;
  /** Last lines of its output, for errors. */
  tail(): string;
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();
process.once("exit", () => {
  for (const c of live) killGroup(c, "SIGKILL");
});

function killGroup(c: ChildProcess, signal: NodeJS.Signals): void {
  try {
    if (c.pid) process.kill(-c.pid, signal);
  } catch {
    // Already gone.
  }
}

/** Starts `command args` detached in its own group with exactly `env`. */
export function startProc(command: string, args: readonly string[], env: Record<string, string>, cwd?: string): Proc {
  const child = spawn(command, args, { env, cwd, stdio: ["ignore", "pipe", "pipe"], detached: true });
  live.add(child);
  const lines: string[] = [];
  const keep = (b: Buffer) => {
    lines.push(...b.toString("utf8").split("\n").filter(Boolean));
    if (lines.length > 40) lines.splice(0, lines.length - 40);
  };
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  return {
    child,
    pid: child.pid!,
    tail: () => lines.join("\n"),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return void live.delete(child);
      const exited = new Promise((r) => child.once("exit", r));
      killGroup(child, "SIGTERM");
      const t = setTimeout(() => killGroup(child, "SIGKILL"), 10_000);
      await exited;
      clearTimeout(t);
      killGroup(child, "SIGKILL");
      live.delete(child);
    },
  };
}

export async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const port = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

/** Waits until `url` answers at all (any status). */
export async function waitForHttp(url: string, proc: Proc, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const r = await fetch(url);
      await r.body?.cancel();
      return;
    } catch (err) {
      if (proc.child.exitCode !== null)
        throw new Error(`${url}: the process exited (${proc.child.exitCode}):\n${proc.tail()}`);
      if (Date.now() > deadline) throw new Error(`${url} did not come up: ${(err as Error).message}\n${proc.tail()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** An MCP SDK client over Streamable HTTP. */
export async function httpClient(url: string, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: "bench", version: "1" });
  // A generous initialize timeout: a pass-through spawns its child while answering initialize.
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }), {
    timeout: 300_000,
  });
  return client;
}

/** Resident set size of one process (its children excluded), MB. */
export function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

const TICK_MS = 1000 / (Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout.trim()) || 100);

/** CPU time (user + system) one process has used so far, ms (its children excluded); NaN once gone. */
export function cpuMs(pid: number): number {
  return (readStat(pid)?.cpuTicks ?? Number.NaN) * TICK_MS;
}
