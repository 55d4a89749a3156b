// N real broker replicas (`slaude-connect serve` child processes) on one PostgreSQL database, behind
// a round-robin proxy: what an operator runs past one machine (issue 14). Each replica has its own
// SLAUDE_DATA_DIR and port; they share only the database URL, the encryption key, the host token,
// the registry and the Slack app (the fake Slack Web API). A replica can be SIGKILLed and
// restarted on the same port and data dir, as an orchestrator would.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { ThreadRef } from "../../src/domain/thread.js";
import { BIN } from "../cli/run.js";
import type { FakeSlack } from "../fixtures/slack/fake-slack-api.js";
import { blockActionPayload, postSlackInteraction, type SignedResponse } from "../fixtures/slack/signed-request.js";
import { freePort } from "./ports.js";
import type { PgCluster } from "./postgres.js";
import { processesReferencing } from "./proc.js";
import { type RoundRobinProxy, startRoundRobinProxy } from "./rr-proxy.js";

/** How a replica process ended. */
export interface ReplicaExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** One broker replica; `pid` and `exited` change on restart, the port and data dir do not. */
export interface Replica {
  readonly index: number;
  readonly port: number;
  /** Its own address, bypassing the proxy. */
  readonly url: string;
  readonly dataDir: string;
  readonly pid: number;
  readonly exited: Promise<ReplicaExit>;
  readonly alive: boolean;
  /** The last 200 KB of its log (stdout and stderr). */
  log(): string;
  /** Sends `signal`, marks it down at the proxy, and resolves once the process is gone. */
  kill(signal?: NodeJS.Signals): Promise<ReplicaExit>;
  /** Starts it again (same port, data dir and environment), waits for /readyz, and marks it up at the proxy. */
  restart(): Promise<void>;
}

/** A running set of replicas. */
export interface ReplicaSet {
  readonly replicas: readonly Replica[];
  readonly proxy: RoundRobinProxy;
  readonly databaseUrl: string;
  /** The temp directory holding every data dir, the registry and the CLI's data dir. */
  readonly root: string;
  readonly hostToken: string;
  readonly signingSecret: string;
  readonly fake: FakeSlack;
  /** The environment an operator's CLI gets: the shared settings, its own data dir. */
  readonly cliEnv: Record<string, string>;
  /** An MCP session bound to `thread`, opened at `baseUrl` (default: through the proxy). */
  session(thread: ThreadRef, baseUrl?: string): Promise<Client>;
  /** Reports `userId`'s turn in `thread` on /v1/turns at `baseUrl` (default: through the proxy). */
  turn(thread: ThreadRef, userId: string, baseUrl?: string): Promise<void>;
  /** Clicks `button` of the card posted to `owner`'s DM as Slack would, at `baseUrl` (default: through the proxy). */
  click(card: ApprovalCardPost, owner: string, actionId: string, baseUrl?: string): Promise<SignedResponse>;
  /** Every live process that mentions this set's root (replicas, vendor children, their descendants). */
  processes(): number[];
  /** Kills every replica and leftover process, closes the proxy, deletes the root. */
  stop(): Promise<void>;
}

/** An approval card as the fake Slack received it: where it is and its buttons (action id → value). */
export interface ApprovalCardPost {
  readonly channel: string;
  readonly ts: string;
  readonly buttons: Readonly<Record<string, string>>;
}

/** What {@link startReplicas} needs. */
export interface ReplicaOptions {
  readonly count: number;
  readonly cluster: PgCluster;
  readonly fake: FakeSlack;
  /** The service registry document every replica (and the CLI) loads. */
  readonly registry: unknown;
  /** Extra environment for every replica and the CLI. */
  readonly env?: Readonly<Record<string, string>>;
  /** The script run as `node <bin> serve`; default the CLI from the sources (test/cli/bin-from-source.js). */
  readonly bin?: string;
}

const LOG_LIMIT = 200_000;
const READY_TIMEOUT_MS = 90_000;

/** Starts the proxy, then `count` replicas at once (so their migrations race), and waits until every one is ready. */
export async function startReplicas(o: ReplicaOptions): Promise<ReplicaSet> {
  const root = mkdtempSync(path.join(os.tmpdir(), "slaude-replicas-"));
  const databaseUrl = await o.cluster.createDatabase();
  const proxy = await startRoundRobinProxy();
  const registryPath = path.join(root, "services.json");
  writeFileSync(registryPath, JSON.stringify(o.registry));
  const hostToken = `host-${randomBytes(16).toString("hex")}`;
  const signingSecret = `signing-${randomBytes(8).toString("hex")}`;
  const shared: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    NODE_ENV: "test",
    SLAUDE_DATABASE_URL: databaseUrl,
    SLAUDE_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
    SLAUDE_HOST_TOKENS: hostToken,
    SLAUDE_REGISTRY_PATH: registryPath,
    // The public address is the balancer's: replicas accept its Host header and put it in links.
    SLAUDE_PUBLIC_URL: proxy.url,
    SLAUDE_LOG_LEVEL: "info",
    SLAUDE_APPROVAL_TIMEOUT_SECONDS: "120",
    SLACK_BOT_TOKEN: o.fake.botToken,
    SLACK_SIGNING_SECRET: signingSecret,
    SLACK_API_URL: o.fake.apiUrl,
    ...o.env,
  };
  const cliDir = path.join(root, "cli");
  mkdirSync(cliDir);
  const cliEnv = { ...shared, SLAUDE_DATA_DIR: cliDir };
  const bin = o.bin ?? BIN;
  const ports = await Promise.all(Array.from({ length: o.count }, () => freePort()));
  const replicas = ports.map((port, index) =>
    makeReplica({ index, port, dataDir: path.join(root, `replica-${index}`), env: shared, bin, proxy }),
  );
  proxy.setBackends(ports);
  const set: ReplicaSet = {
    replicas,
    proxy,
    databaseUrl,
    root,
    hostToken,
    signingSecret,
    fake: o.fake,
    cliEnv,
    session: (thread, baseUrl = proxy.url) => openSession(baseUrl, hostToken, thread),
    async turn(thread, userId, baseUrl = proxy.url) {
      const res = await fetch(`${baseUrl}/v1/turns`, {
        method: "POST",
        headers: { Authorization: `Bearer ${hostToken}`, "content-type": "application/json" },
        body: JSON.stringify({
          team_id: thread.teamId,
          channel_id: thread.channelId,
          thread_ts: thread.threadTs,
          user_id: userId,
        }),
      });
      if (res.status !== 204) throw new Error(`/v1/turns answered ${res.status}: ${await res.text()}`);
    },
    click: (card, owner, actionId, baseUrl = proxy.url) => {
      const value = card.buttons[actionId];
      if (value === undefined) throw new Error(`the card has no ${actionId} button`);
      return postSlackInteraction(
        `${baseUrl}/slack/events`,
        signingSecret,
        blockActionPayload({
          userId: owner,
          teamId: o.fake.teamId,
          actionId,
          value,
          channelId: card.channel,
          messageTs: card.ts,
          responseUrl: o.fake.responseUrl(`click-${card.ts}`),
        }),
      );
    },
    processes: () => processesReferencing([root]),
    async stop() {
      for (const r of replicas) if (r.alive) await r.kill("SIGKILL");
      await proxy.close();
      for (const pid of processesReferencing([root])) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // already gone
        }
      }
      rmSync(root, { recursive: true, force: true });
    },
  };
  try {
    await Promise.all(replicas.map((r) => r.restart()));
  } catch (err) {
    await set.stop();
    throw err;
  }
  return set;
}

interface ReplicaSpec {
  readonly index: number;
  readonly port: number;
  readonly dataDir: string;
  readonly env: Record<string, string>;
  readonly bin: string;
  readonly proxy: RoundRobinProxy;
}

/** A replica handle, not yet started: `restart()` starts it. */
function makeReplica(s: ReplicaSpec): Replica {
  mkdirSync(s.dataDir, { recursive: true });
  let child: ChildProcess | undefined;
  let exited: Promise<ReplicaExit> = Promise.resolve({ code: null, signal: null });
  let log = "";
  const url = `http://127.0.0.1:${s.port}`;
  const alive = (): boolean => child !== undefined && child.exitCode === null && child.signalCode === null;
  const replica: Replica = {
    index: s.index,
    port: s.port,
    url,
    dataDir: s.dataDir,
    get pid() {
      return child?.pid ?? -1;
    },
    get exited() {
      return exited;
    },
    get alive() {
      return alive();
    },
    log: () => log,
    async kill(signal = "SIGKILL") {
      s.proxy.setDown(s.index, true);
      if (alive()) child!.kill(signal);
      return exited;
    },
    async restart() {
      if (alive()) throw new Error(`replica ${s.index} is still running`);
      log += `\n--- start ${new Date().toISOString()} ---\n`;
      const c = spawn(process.execPath, [s.bin, "serve"], {
        env: { ...s.env, SLAUDE_DATA_DIR: s.dataDir, PORT: String(s.port) },
        stdio: ["ignore", "pipe", "pipe"],
        shell: false,
      });
      child = c;
      exited = new Promise((resolve) => c.once("exit", (code, signal) => resolve({ code, signal })));
      const keep = (d: string): void => {
        log = (log + d).slice(-LOG_LIMIT);
      };
      c.stdout!.setEncoding("utf8").on("data", keep);
      c.stderr!.setEncoding("utf8").on("data", keep);
      const deadline = Date.now() + READY_TIMEOUT_MS;
      for (;;) {
        if (!alive()) throw new Error(`replica ${s.index} exited during start-up:\n${log.slice(-4_000)}`);
        if (Date.now() > deadline)
          throw new Error(`replica ${s.index} not ready in ${READY_TIMEOUT_MS / 1000} s:\n${log.slice(-4_000)}`);
        if (
          await fetch(`${url}/readyz`).then(
            (r) => r.ok,
            () => false,
          )
        )
          break;
        await new Promise((r) => setTimeout(r, 100));
      }
      s.proxy.setDown(s.index, false);
    },
  };
  return replica;
}

/** A real MCP session over Streamable HTTP, bound to `thread`, as the agent host opens it. */
export async function openSession(baseUrl: string, hostToken: string, thread: ThreadRef): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), {
    requestInit: {
      headers: {
        Authorization: `Bearer ${hostToken}`,
        "X-Slaude-Thread": `${thread.teamId}/${thread.channelId}/${thread.threadTs}`,
      },
    },
    // A broken GET stream is reopened (through the balancer, so on another replica) a few times.
    reconnectionOptions: {
      maxRetries: 5,
      initialReconnectionDelay: 200,
      maxReconnectionDelay: 1_000,
      reconnectionDelayGrowFactor: 1.5,
    },
  });
  const client = new Client({ name: "replica-test-host", version: "1" });
  await client.connect(transport, { timeout: 60_000 });
  return client;
}

/** The session id the server gave `client` at initialize. */
export function sessionIdOf(client: Client): string | undefined {
  return (client.transport as StreamableHTTPClientTransport | undefined)?.sessionId;
}

/** Waits for the `index`-th (0-based) approval card posted to `owner`'s DM and returns it with its buttons. */
export async function approvalCard(
  fake: FakeSlack,
  owner: string,
  index = 0,
  timeoutMs = 30_000,
): Promise<ApprovalCardPost> {
  const dm = `D${owner}`;
  const cards = () =>
    fake
      .callsOf("chat.postMessage")
      .filter((c) => c.args.channel === dm && Array.isArray(c.args.blocks) && c.response?.ok === true);
  await fake.waitFor("chat.postMessage", () => cards().length > index, timeoutMs);
  const post = cards()[index]!;
  const blocks = post.args.blocks as { type: string; elements?: { action_id?: string; value?: string }[] }[];
  const buttons: Record<string, string> = {};
  for (const b of blocks)
    if (b.type === "actions")
      for (const e of b.elements ?? []) if (e.action_id && e.value !== undefined) buttons[e.action_id] = e.value;
  return { channel: String(post.response?.channel ?? dm), ts: String(post.response?.ts), buttons };
}
