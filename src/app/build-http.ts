import { resolveHostTokens, type HostTokenSource } from "../config/dev-host-token.js";
import { PeriodicJob } from "../jobs/periodic-job.js";
import { OriginGuard } from "../server/host-auth.js";
import { HttpServer } from "../server/http-server.js";
import type { EventsEndpoint } from "../server/events-endpoint.js";
import type { McpEndpoint } from "../server/mcp-endpoint.js";
import { SlackAuthState } from "../server/readiness.js";
import type { BrokerStage } from "./build-broker.js";
import type { Core } from "./build-core.js";
import type { WorkspaceStage } from "./build-workspace.js";
import { mountHostRoutes } from "./host-routes.js";
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
  /** Slack's auth.test behind /readyz, repeated (started once the server listens). */
  readonly slackAuthJob: PeriodicJob | undefined;
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
    const generated = hostTokens.origin === "dev-generated";
    core.log.info(generated ? "development host token generated" : "development host token in use", { file: hostTokens.file });
  }
  return hostTokens;
}

/** Builds the server and mounts every route but the login and console ones. */
export async function buildHttp(core: Core, w: WorkspaceStage, b: BrokerStage): Promise<HttpStage> {
  const { opts, config, clock, log, store, metrics, registry, keys } = core;
  const { slack, installations } = w.workspace;
  const server = new HttpServer(log);
  const hostTokens = hostTokensOf(core);
  const origin = originGuard(core);
  // With SLACK_BOT_TOKEN: auth.test, and the token recorded as the one installation (again if Slack was down at start).
  const slackAuth = slack && installations ? new SlackAuthState(slackAuthCheck(slack, installations, config), log) : undefined;
  const facts = installations ? tenantFacts(installations, store, clock) : undefined;
  const intervalMs = opts.slackAuthCheckIntervalMs ?? 60_000;
  const slackAuthJob = slackAuth ? new PeriodicJob({ name: "slack auth check", intervalMs, run: () => slackAuth.check(), log, clock, metrics }) : undefined;
  const services = () => registry.list().length;
  const health = facts ? { installations: facts.health } : {};
  mountProbes(server, { store, services, slack: slackAuth, ...health, metrics, metricsToken: config.metricsToken, origin });
  // Slack's tenants are its installations: a host request for a team none serves is refused, whatever the token.
  const tenants = opts.tenants ?? facts?.directory;
  const hostDeps = { http: server, broker: b.broker, tokens: hostTokens.tokens, keys, origin, config, clock, log, store };
  const { mcp, events } = await mountHostRoutes({ ...hostDeps, ...(tenants ? { tenants } : {}) });
  if (slack?.httpHandler) server.route({ method: "POST", path: "/slack/events", handler: slack.httpHandler });
  if (slack && installations) mountInstallFlow(server, slack, { installations, config, store, clock, log });
  const stop = async (): Promise<void> => {
    await mcp.close();
    events.close();
    await slack?.stop();
    await server.close();
    await slackAuthJob?.stop();
  };
  return { server, hostTokens, origin, mcp, events, slackAuthJob, stop };
}
