// The routes an agent host and a login viewer reach, mounted on the app's HTTP server: /mcp, the
// turn reports, the call event stream, and the live-view login page with its assets and socket.
import type { Broker } from "../broker/broker.js";
import type { Clock } from "../clock/clock.js";
import type { Config } from "../config/env.js";
import { ConfigError } from "../config/errors.js";
import type { Logger } from "../log/logger.js";
import { LiveViewEndpoint } from "../login/live-view-endpoint.js";
import type { LoginService } from "../login/login-service.js";
import { ReplicaForwarder } from "../login/replica/forward.js";
import type { LoginReplica } from "../login/replica/replica.js";
import { LoginRouter } from "../login/replica/router.js";
import { EventsEndpoint } from "../server/events-endpoint.js";
import type { OriginGuard } from "../server/host-auth.js";
import { HostTeamAuth } from "../server/host-teams.js";
import type { HttpServer } from "../server/http-server.js";
import { McpEndpoint } from "../server/mcp-endpoint.js";
import { SessionTokenDigests } from "../server/session-token.js";
import { TenantGuard } from "../server/tenant-guard.js";
import { turnEndHandler, turnsHandler } from "../server/turns-endpoint.js";
import { singleInstallation, type TenantDirectory } from "../tenancy/tenant-directory.js";
import { unboundTokenFinding } from "../tenancy/unbound-tokens.js";
import type { Topology } from "../topology/topology.js";
import type { KeyRing } from "../vault/keyring.js";

/** What the host routes need from the composition root. */
export interface HostRouteDeps {
  readonly http: HttpServer;
  readonly broker: Broker;
  /** The host tokens (SLAUDE_HOST_TOKENS or the development token); their bindings are config.hostTokenTeams. */
  readonly tokens: readonly string[];
  /** The master keys: MCP sessions record a keyed digest of the token that opened them. */
  readonly keys: KeyRing;
  /** Tenant facts for the host-token guard; default: one installation, no org (the local workspace, one SLACK_BOT_TOKEN). */
  readonly tenants?: TenantDirectory;
  readonly origin: OriginGuard;
  readonly config: Config;
  readonly clock: Clock;
  readonly log: Logger;
  /** The topology: with replicas, MCP session records are shared so any replica serves any session. */
  readonly topology: Pick<Topology, "sessionRecords">;
}

/**
 * Refuses (production) or warns about (otherwise) unbound host tokens while several installations
 * are served (src/tenancy/unbound-tokens.ts); the message names counts and the fix, never a token.
 */
export async function checkUnboundHostTokens(
  auth: HostTeamAuth,
  tenants: TenantDirectory,
  config: Config,
  log: Logger,
): Promise<void> {
  if (auth.unboundCount === 0) return;
  const f = unboundTokenFinding({
    unboundTokens: auth.unboundCount,
    liveInstallations: await tenants.liveInstallations(),
    production: config.nodeEnv === "production",
  });
  if (f.level === "error")
    throw new ConfigError("invalid_env", `invalid environment\nSLAUDE_HOST_TOKENS: ${f.message}\nfix: ${f.fix ?? ""}`);
  if (f.level === "warn") log.warn(`UNBOUND HOST TOKENS: ${f.message}`, { fix: f.fix ?? "" });
}

/**
 * Mounts /mcp, /v1/turns, /v1/turns/end and /v1/events, every one confined to the tenant of its
 * host token (src/tenancy/host-binding.ts); returns the endpoints the app closes. Throws ConfigError
 * when production would serve several installations with an unbound host token.
 */
export async function mountHostRoutes(d: HostRouteDeps): Promise<{ mcp: McpEndpoint; events: EventsEndpoint }> {
  const { http, broker, origin, config, clock, log } = d;
  const directory = d.tenants ?? singleInstallation();
  const auth = new HostTeamAuth(d.tokens, config.hostTokenTeams, new SessionTokenDigests(d.keys));
  await checkUnboundHostTokens(auth, directory, config, log);
  const tenants = new TenantGuard(directory, log);
  const sessionLimits = { ...config.mcpSessions, maxSessionsPerTeam: config.tenantLimits.mcpSessionsPerTeam };
  const mcp = new McpEndpoint({
    broker,
    auth,
    origin,
    log,
    limits: sessionLimits,
    clock,
    records: d.topology.sessionRecords(config.mcpSessions.maxSessions),
    tenants,
  });
  http.route({ method: "*", path: "/mcp", jsonRpc: true, handler: mcp.handler });
  const turnDeps = { auth, origin, tenants, now: () => clock.now() };
  http.route({ method: "POST", path: "/v1/turns", handler: turnsHandler(broker, turnDeps) });
  http.route({ method: "POST", path: "/v1/turns/end", handler: turnEndHandler(broker, turnDeps) });
  const events = new EventsEndpoint(broker.events, auth, origin, tenants, {
    ...config.events,
    maxClientsPerTeam: config.tenantLimits.eventStreamsPerTeam,
    refused: (l) => broker.deps.metrics.limitRefused(l),
    clock,
    log,
  });
  http.route({ method: "GET", path: "/v1/events", handler: events.handler });
  return { mcp, events };
}

/**
 * Mounts the live-view login page, its static assets and its WebSocket; with `replica`, the page and
 * socket of a flow another replica holds are forwarded there (src/login/replica/router.ts).
 */
export function mountLoginRoutes(
  http: HttpServer,
  logins: LoginService,
  config: Config,
  clock: Clock,
  log: Logger,
  replica?: LoginReplica,
): LiveViewEndpoint {
  const liveView = new LiveViewEndpoint(
    logins,
    {
      publicUrl: config.publicUrl,
      flowTimeoutMs: config.login.flowTimeoutMs,
      allowedOrigins: config.allowedOrigins,
      clock,
    },
    log,
  );
  const router = replica
    ? new LoginRouter({ replica, logins, forwarder: new ReplicaForwarder(), liveView, log })
    : undefined;
  http.route({ method: "GET", path: "/login/l", prefix: true, handler: router?.page ?? liveView.page });
  http.route({ method: "GET", path: "/login/assets", prefix: true, handler: liveView.asset });
  http.upgrade("/login/ws", router?.upgrade ?? liveView.upgrade);
  return liveView;
}
