import { type HostTokenSource, resolveHostTokens } from "../config/dev-host-token.js";
import { PeriodicJob } from "../jobs/periodic-job.js";
import type { EventsEndpoint } from "../server/events-endpoint.js";
import { OriginGuard } from "../server/host-auth.js";
import { HttpServer } from "../server/http-server.js";
import type { McpEndpoint } from "../server/mcp-endpoint.js";
import { SlackAuthState } from "../server/readiness.js";
import type { Core } from "./build-core.js";
import { mountHostRoutes } from "./host-routes.js";
import type { Parts } from "./parts.js";
import { mountProbes } from "./probes.js";
import { mountInstallFlow, slackAuthCheck, tenantFacts } from "./slack-tenants.js";
import type { Stoppable } from "./stop-stack.js";

// The HTTP builder: the server with its probes, the host routes (/mcp, /v1/turns, /v1/events) and
// Slack's routes, not listening yet. Its stop closes the inbound edges: the MCP sessions and event
// streams first (so the drain is quick), Slack's receiver, then the server itself.

/** The server, what is mounted on it, and what the listen builder starts. */
export interface HttpStage extends Stoppable {
  readonly server: HttpServer;
  readonly hostTokens: HostTokenSource;
  readonly origin: OriginGuard;
  readonly mcp: McpEndpoint;
  readonly events: EventsEndpoint;
  /** Starts Slack's side once the server listens: the auth check behind /readyz, and Socket Mode in that mode. */
  startSlack(): Promise<void>;
}

/** The Host/Origin rule of every browser-reachable route (the bound port is added once known). */
function originGuard(core: Core): OriginGuard {
  const { publicUrl, port, allowedHosts, allowedOrigins } = core.config;
  return new OriginGuard({ publicUrl, port, allowedHosts, allowedOrigins });
}

/** Development without SLAUDE_HOST_TOKENS: a generated token in the data dir; otherwise exactly the configured ones. */
function hostTokensOf(core: Core): HostTokenSource {
  const hostTokens = resolveHostTokens(core.config);
  if (hostTokens.file) {
    const what = hostTokens.origin === "dev-generated" ? "generated" : "in use";
    core.log.info(`development host token ${what}`, { file: hostTokens.file });
  }
  return hostTokens;
}

/** Builds the server and mounts every route but the login and console ones. */
export async function buildHttp(p: Pick<Parts, "core" | "workspace" | "broker">): Promise<HttpStage> {
  const { core } = p;
  const { opts, config, clock, log, store, metrics, registry, keys } = core;
  const { slack, installations } = p.workspace.workspace;
  const server = new HttpServer(log);
  const hostTokens = hostTokensOf(core);
  const origin = originGuard(core);
  // With SLACK_BOT_TOKEN: auth.test, and the token recorded as the one installation (again if Slack was down at start).
  const authCheck = slack && installations ? slackAuthCheck(slack, installations, config) : undefined;
  const slackAuth = authCheck ? new SlackAuthState(authCheck, log) : undefined;
  const facts = installations ? tenantFacts(installations, store, clock) : undefined;
  const intervalMs = opts.slackAuthCheckIntervalMs ?? 60_000;
  const authJob = { name: "slack auth check", intervalMs, log, clock, metrics };
  const slackAuthJob = slackAuth ? new PeriodicJob({ ...authJob, run: () => slackAuth.check() }) : undefined;
  const services = () => registry.list().length;
  const health = facts ? { installations: facts.health } : {};
  const { metricsToken } = config;
  mountProbes(server, { store, services, slack: slackAuth, ...health, metrics, metricsToken, origin });
  // Slack's tenants are its installations: a host request for a team none serves is refused, whatever the token.
  const tenants = opts.tenants ?? facts?.directory;
  const { tokens } = hostTokens;
  const topology = core.deployment;
  const hostDeps = { http: server, broker: p.broker.broker, tokens, keys, origin, config, clock, log, topology };
  const { mcp, events } = await mountHostRoutes({ ...hostDeps, ...(tenants ? { tenants } : {}) });
  if (slack?.httpHandler) server.route({ method: "POST", path: "/slack/events", handler: slack.httpHandler });
  if (slack && installations) mountInstallFlow(server, slack, { installations, config, store, clock, log });
  let slackStarted = false;
  const startSlack = async (): Promise<void> => {
    slackAuthJob?.start();
    if (!slack) return;
    slackStarted = true;
    await slack.start();
    log.info("slack app ready", { mode: slack.mode });
  };
  const stop = async (): Promise<void> => {
    await mcp.close();
    events.close();
    // A receiver that never started (the start failed before listening) has nothing to stop.
    if (slackStarted) await slack?.stop();
    await server.close();
    await slackAuthJob?.stop();
  };
  return { server, hostTokens, origin, mcp, events, startSlack, stop };
}
