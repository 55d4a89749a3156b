// The broker as `serve` runs it, in its own process: compiled JavaScript (dist/), JSON logger,
// Slack (a fake Web API in the bench process) for membership and approval cards, a host token,
// the bench registry on disk, and connections stored through the CLI or, for the large tables,
// through the library before the process starts.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { systemClock } from "../../src/clock/clock.js";
import { loadConfig } from "../../src/config/env.js";
import { parseRegistry } from "../../src/config/registry.js";
import { ConnectionLifecycle } from "../../src/connections/lifecycle.js";
import type { ThreadRef } from "../../src/domain/thread.js";
import { memoryLogger } from "../../src/log/logger.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { resolveKeyRing } from "../../src/vault/key-source.js";
import { Vault } from "../../src/vault/vault.js";
import { freePort, httpClient, type Proc, startProc, waitForHttp } from "./procs.js";

export const ROOT = fileURLToPath(new URL("../../", import.meta.url));
export const ECHO_VENDOR = path.join(ROOT, "bench/servers/echo-vendor.mjs");
const BIN = path.join(ROOT, "bin/slaude-connect.js");

/** The bench registry: the plain-JS echo vendor, a pasted token, every scope. */
export function benchRegistryDoc(): unknown {
  return {
    services: {
      echo: {
        transport: {
          type: "stdio",
          command: process.execPath,
          args: [ECHO_VENDOR],
          credentialEnv: { VENDOR_TOKEN: "{{token}}" },
        },
        capture: { strategy: "paste", fields: [{ name: "token", label: "Token" }] },
        scopes: ["thread", "user", "shared"],
        tools: { echo: ["borrowable", "read"], slow: ["borrowable", "read"], big: ["borrowable", "read"] },
      },
    },
  };
}

export interface BrokerProc {
  readonly url: string;
  readonly proc: Proc;
  readonly env: Record<string, string>;
  readonly hostToken: string;
  /** An MCP session bound to `thread`. */
  session(thread: ThreadRef): Promise<Client>;
  /** Reports `userId`'s turn in `thread` on /v1/turns. */
  turn(thread: ThreadRef, userId: string): Promise<void>;
  /** The Prometheus text of /metrics. */
  metrics(): Promise<string>;
  stop(): Promise<void>;
}

export interface BrokerSetup {
  readonly dir: string;
  readonly slack: { apiUrl: string; botToken: string; signingSecret: string };
  readonly env?: Record<string, string>;
  /** Node flags for the broker process only (not the CLI), e.g. --cpu-prof. */
  readonly nodeArgs?: readonly string[];
}

/** The environment a broker process (and the CLI on its database) gets. */
export function brokerEnv(s: BrokerSetup, port: number): Record<string, string> {
  mkdirSync(s.dir, { recursive: true });
  const registry = path.join(s.dir, "services.json");
  writeFileSync(registry, JSON.stringify(benchRegistryDoc()));
  return {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: s.dir,
    PORT: String(port),
    SLAUDE_DATA_DIR: s.dir,
    SLAUDE_REGISTRY_PATH: registry,
    SLAUDE_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
    SLAUDE_HOST_TOKENS: `bench-host-${randomBytes(12).toString("hex")}`,
    SLAUDE_METRICS_TOKEN: `bench-metrics-${randomBytes(12).toString("hex")}`,
    SLAUDE_LOG_LEVEL: "warn",
    SLAUDE_POOL_MAX_CHILDREN: "64",
    // The bench drives one user far past any human rate: the limiter still runs on every call.
    SLAUDE_CALL_RATE_PER_USER: "9999999/min",
    SLAUDE_CALL_RATE_PER_TEAM: "9999999/min",
    SLAUDE_APPROVAL_TIMEOUT_SECONDS: "60",
    SLACK_BOT_TOKEN: s.slack.botToken,
    SLACK_SIGNING_SECRET: s.slack.signingSecret,
    SLACK_API_URL: s.slack.apiUrl,
    ...s.env,
  };
}

/** Stores one connection through the CLI, the way an admin would (token on stdin). */
export async function cliAdd(
  env: Record<string, string>,
  c: { team: string; scope: "thread" | "user" | "shared"; owner?: string; thread?: ThreadRef; token: string },
): Promise<void> {
  const args = [BIN, "connections", "add", "--team", c.team, "--service", "echo", "--scope", c.scope];
  if (c.owner) args.push("--owner", c.owner);
  if (c.thread) args.push("--channel", c.thread.channelId, "--thread", c.thread.threadTs);
  const child = spawn(process.execPath, args, { env, stdio: ["pipe", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (b: Buffer) => (out += b.toString()));
  child.stderr.on("data", (b: Buffer) => (out += b.toString()));
  child.stdin.end(`${c.token}\n`);
  const code = await new Promise<number | null>((r) => child.once("exit", r));
  if (code !== 0) throw new Error(`connections add exited ${code}: ${out}`);
}

/** A connection the bench stores through the library before the broker starts. */
export interface SeedRow {
  readonly owner: string;
  readonly thread?: ThreadRef;
}

/** `n` connections of other people (user- and thread-scoped), as months of use leave them; never picked. */
export function others(team: string, n: number): SeedRow[] {
  return Array.from({ length: n }, (_, i) => ({
    owner: `USEED${String(i).padStart(6, "0")}`,
    ...(i % 2 === 0
      ? { thread: { teamId: team, channelId: `CSEED${i % 97}`, threadTs: `1600000000.${String(i).padStart(6, "0")}` } }
      : {}),
  }));
}

/** Stores rows through the library (the CLI's code path without a process per row): user-scoped, or thread-scoped when a thread is given. */
export async function seed(env: Record<string, string>, team: string, rows: readonly SeedRow[]): Promise<void> {
  const config = loadConfig(env);
  const { store } = openSqliteStore(config.dbPath, () => Date.now());
  const lifecycle = new ConnectionLifecycle({
    store,
    vault: new Vault(resolveKeyRing(config).ring),
    registry: parseRegistry(benchRegistryDoc(), "bench"),
    clock: systemClock,
    log: memoryLogger("error"),
  });
  try {
    for (const [i, r] of rows.entries()) {
      await lifecycle.create({
        teamId: team,
        ownerUserId: r.owner,
        service: "echo",
        scope: r.thread ? "thread" : "user",
        ...(r.thread ? { channelId: r.thread.channelId, threadTs: r.thread.threadTs } : {}),
        credential: { kind: "fields", fields: { token: `seed-${i}-${r.owner}` } },
        createdBy: "cli:bench",
      });
    }
  } finally {
    await store.close();
  }
}

/** The node flags `npm start` of the checkout holding `bin` starts the broker with (none if it sets none). */
export function startFlags(bin: string): string[] {
  const pkg = JSON.parse(readFileSync(path.join(path.dirname(bin), "../package.json"), "utf8")) as {
    scripts?: { start?: string };
  };
  const flags = pkg.scripts?.start?.match(/^node ((?:--\S+ )*)bin\/slaude-connect\.js serve$/)?.[1];
  return flags ? flags.trim().split(" ") : [];
}

/** Starts the broker as `npm start` does (its node flags, then `nodeArgs`) on a free port and waits for /readyz. */
export async function startBroker(
  env: Record<string, string>,
  nodeArgs: readonly string[] = [],
  /** The broker's entry point: this checkout's, or another built checkout's to compare against. */
  bin = BIN,
): Promise<BrokerProc> {
  const port = Number(env.PORT);
  const proc = startProc(process.execPath, [...startFlags(bin), ...nodeArgs, bin, "serve"], {
    ...env,
    NODE_ENV: env.NODE_ENV ?? "development",
  });
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/healthz`, proc);
  const hostToken = env.SLAUDE_HOST_TOKENS!;
  const auth = { Authorization: `Bearer ${hostToken}` };
  return {
    url,
    proc,
    env,
    hostToken,
    session: (t) =>
      httpClient(`${url}/mcp`, { ...auth, "X-Slaude-Thread": `${t.teamId}/${t.channelId}/${t.threadTs}` }),
    async turn(t, userId) {
      const r = await fetch(`${url}/v1/turns`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify({ team_id: t.teamId, channel_id: t.channelId, thread_ts: t.threadTs, user_id: userId }),
      });
      if (r.status !== 204) throw new Error(`/v1/turns answered ${r.status}: ${await r.text()}`);
    },
    async metrics() {
      const r = await fetch(`${url}/metrics`, { headers: { Authorization: `Bearer ${env.SLAUDE_METRICS_TOKEN}` } });
      return r.text();
    },
    stop: () => proc.stop(),
  };
}

/** Starts a broker with a fresh port; `prepare` runs on its database before it starts. */
export async function launchBroker(
  s: BrokerSetup,
  prepare?: (env: Record<string, string>) => Promise<void>,
): Promise<BrokerProc> {
  const env = brokerEnv(s, await freePort());
  await prepare?.(env);
  return startBroker(env, s.nodeArgs);
}

/** The value of one Prometheus sample (summed over label sets matching `labels`). */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-z_]+)(\{[^}]*\})?\s+([-0-9.e+]+|NaN)$/.exec(line);
    if (!m || m[1] !== name) continue;
    if (Object.entries(labels).every(([k, v]) => (m[2] ?? "").includes(`${k}="${v}"`))) sum += Number(m[3]);
  }
  return sum;
}
