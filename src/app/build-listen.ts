import type { Config } from "../config/env.js";
import { errorMessage } from "../domain/errors.js";
import { VERSION } from "../domain/version.js";
import { startupBanner } from "./banner.js";
import { type RunningConsole, startConsole } from "./console.js";
import type { Parts } from "./parts.js";
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

/** The URL of `port` on the bound host, and one to connect to: loopback for a wildcard bind (passes the Host check). */
function addresses(config: Config, port: number): { url: string; reachable: string } {
  const host = config.bindHost;
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
  const reachable = host === "0.0.0.0" || host === "::" ? `http://127.0.0.1:${port}` : url;
  return { url, reachable };
}

/**
 * The start-up block. The local workspace has real threads: the block's commands give a member the
 * turn in one and call a tool.
 */
async function bannerOf(p: Pick<Parts, "core" | "workspace" | "http">, reachable: string, run?: RunningConsole) {
  const { log, registry } = p.core;
  const failed = (err: unknown): void => {
    log.warn("no example thread for the start-up block", { error: errorMessage(err) });
  };
  const example = await p.workspace.workspace.local?.exampleThread().catch(failed);
  const service = registry.get("demo")?.name ?? registry.list()[0]?.name;
  const { file, tokens } = p.http.hostTokens;
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
export async function listen(p: Parts): Promise<Listening> {
  const { config, clock, log, store, registry } = p.core;
  const h = p.http;
  const port = await h.server.listen(config.port, config.bindHost);
  const { local, adapters } = p.workspace.workspace;
  const { lifecycle, pins } = p.broker;
  const broker = p.broker.broker.deps;
  const hostToken = () => h.hostTokens.tokens[0];
  const consoleDeps = { http: h.server, port, config, store, lifecycle, pins, broker, hostToken, clock, log };
  const admins = adapters?.admins;
  const run = local && admins ? await startConsole({ ...consoleDeps, workspace: local, admins }) : undefined;
  h.origin.allowPort(port);
  await h.startSlack();
  const services = registry.list().length;
  log.info("slaude-connect listening", { host: config.bindHost, port, version: VERSION, services });
  const { url, reachable } = addresses(config, port);
  const loopbackOnly = /^(127\.|localhost$|\[::1\]$)/.test(new URL(reachable).hostname);
  if (p.topology.shared && !config.replicaUrl && loopbackOnly) {
    const why =
      "SLAUDE_REPLICA_URL is not set: other replicas forward logins held here to this address, " +
      "reachable only from this machine";
    log.warn(why, { replicaUrl: reachable });
  }
  await p.login.replica.start(config.replicaUrl ?? new URL(reachable).origin);
  const banner = await bannerOf(p, reachable, run);
  return { port, url, banner, stop: async () => run?.close() };
}
