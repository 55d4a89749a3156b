import type { Config } from "../config/env.js";
import { VERSION } from "../domain/version.js";
import type { BrokerStage } from "./build-broker.js";
import type { Core } from "./build-core.js";
import type { HttpStage } from "./build-http.js";
import type { LoginStage } from "./build-login.js";
import type { Topology } from "./build-topology.js";
import type { WorkspaceStage } from "./build-workspace.js";
import { startupBanner } from "./banner.js";
import { startConsole, type RunningConsole } from "./console.js";
import type { Stoppable } from "./stop-stack.js";

// The last builder: the server listens, then what needs its port starts (the console, the Origin
// rule's port, Slack's receiver and auth check, the login replica's address) and the start-up
// block is written. Its stop, the first to run, closes the console.

/** Where the app listens, and the start-up block `serve` prints. */
export interface Listening extends Stoppable {
  readonly port: number;
  readonly url: string;
  readonly banner: string;
}

/** The URL of `port` on the bound host, and one to connect to (loopback for a wildcard bind, which passes the Host check). */
function addresses(config: Config, port: number): { url: string; reachable: string } {
  const host = config.bindHost;
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
  const reachable = host === "0.0.0.0" || host === "::" ? `http://127.0.0.1:${port}` : url;
  return { url, reachable };
}

/** The start-up block; the local workspace has real threads, so its commands give a member the turn in one and call a tool. */
async function bannerOf(core: Core, w: WorkspaceStage, h: HttpStage, reachable: string, run: RunningConsole | undefined): Promise<string> {
  const { log, registry } = core;
  const failed = (err: unknown): void => void log.warn("no example thread for the start-up block", { error: (err as Error).message });
  const example = await w.workspace.local?.exampleThread().catch(failed);
  const service = registry.get("demo")?.name ?? registry.list()[0]?.name;
  const { file, tokens } = h.hostTokens;
  const thread = example ? { ...example.thread, channelName: example.channel.name } : undefined;
  const user = example ? { userId: example.user.id, userName: example.user.name } : undefined;
  return startupBanner({
    mcpUrl: `${reachable}/mcp`,
    ...(run ? { consoleUrl: run.url } : {}),
    hostToken: file ? { file } : tokens.length ? { env: "SLAUDE_HOST_TOKENS" } : undefined,
    exampleThread: "<team_id>/<channel_id>/<thread_ts>",
    ...(thread && user ? { tryCall: { ...thread, ...user, ...(service ? { service } : {}) } } : {}),
  });
}

/** Listens, starts what needs the port, and writes the start-up block. */
export async function listen(core: Core, t: Topology, w: WorkspaceStage, b: BrokerStage, h: HttpStage, l: LoginStage): Promise<Listening> {
  const { config, clock, log, store, registry } = core;
  const port = await h.server.listen(config.port, config.bindHost);
  const { local, adapters, slack } = w.workspace;
  const consoleDeps = { http: h.server, port, config, store, lifecycle: b.lifecycle, pins: b.pins, clock, log };
  const hostToken = () => h.hostTokens.tokens[0];
  const run = local && adapters ? await startConsole({ ...consoleDeps, workspace: local, admins: adapters.admins, hostToken }) : undefined;
  h.origin.allowPort(port);
  h.slackAuthJob?.start();
  if (slack) {
    await slack.start();
    log.info("slack app ready", { mode: slack.mode });
  }
  log.info("slaude-connect listening", { host: config.bindHost, port, version: VERSION, services: registry.list().length });
  const { url, reachable } = addresses(config, port);
  const loopbackOnly = /^(127\.|localhost$|\[::1\]$)/.test(new URL(reachable).hostname);
  if (t.shared && !config.replicaUrl && loopbackOnly) {
    const why = "SLAUDE_REPLICA_URL is not set: other replicas forward logins held here to this address, reachable only from this machine";
    log.warn(why, { replicaUrl: reachable });
  }
  await l.replica.start(config.replicaUrl ?? new URL(reachable).origin);
  const banner = await bannerOf(core, w, h, reachable, run);
  return { port, url, banner, stop: async () => run?.close() };
}
