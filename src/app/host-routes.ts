// The routes an agent host and a login viewer reach, mounted on the app's HTTP server: /mcp, the
// turn reports, the call event stream, and the live-view login page with its assets and socket.
import type { Broker } from "../broker/broker.js";
import type { Clock } from "../clock/clock.js";
import type { Config } from "../config/env.js";
import type { Logger } from "../log/logger.js";
import { LiveViewEndpoint } from "../login/live-view-endpoint.js";
import type { LoginService } from "../login/login-service.js";
import { ReplicaForwarder } from "../login/replica/forward.js";
import type { LoginReplica } from "../login/replica/replica.js";
import { LoginRouter } from "../login/replica/router.js";
import { EventsEndpoint } from "../server/events-endpoint.js";
import type { HostTokenAuth, OriginGuard } from "../server/host-auth.js";
import { HostTeamAuth } from "../server/host-teams.js";
import type { HttpServer } from "../server/http-server.js";
import { McpEndpoint } from "../server/mcp-endpoint.js";
import { MemorySessionRecords, type SessionRecords } from "../server/session-records.js";
import { PostgresStore } from "../store/postgres/pg-store.js";
import type { Store } from "../store/store.js";
import { turnEndHandler, turnsHandler } from "../server/turns-endpoint.js";

/** What the host routes need from the composition root. */
export interface HostRouteDeps {
  readonly http: HttpServer;
  readonly broker: Broker;
  readonly auth: HostTokenAuth;
  readonly tokens: readonly string[];
  readonly origin: OriginGuard;
  readonly config: Config;
  readonly clock: Clock;
  readonly log: Logger;
  /** The store: on PostgreSQL, MCP session records are shared so any replica serves any session. */
  readonly store: Store;
}

/** Shared session records on PostgreSQL; on SQLite (one process) sessions live in this process only. */
function sessionRecords(store: Store, config: Config): SessionRecords {
  return store instanceof PostgresStore ? store.mcpSessions : new MemorySessionRecords(config.mcpSessions.maxSessions);
}

/** Mounts /mcp, /v1/turns, /v1/turns/end and /v1/events; returns the endpoints the app closes. */
export function mountHostRoutes(d: HostRouteDeps): { mcp: McpEndpoint; events: EventsEndpoint } {
  const { http, broker, auth, origin, config, clock, log } = d;
  const sessionLimits = { ...config.mcpSessions, maxSessionsPerTeam: config.tenantLimits.mcpSessionsPerTeam };
  const mcp = new McpEndpoint(broker, auth, origin, log, sessionLimits, clock, sessionRecords(d.store, config));
  http.route({ method: "*", path: "/mcp", handler: mcp.handler });
  http.route({ method: "POST", path: "/v1/turns", handler: turnsHandler(broker, auth, origin, () => clock.now()) });
  http.route({ method: "POST", path: "/v1/turns/end", handler: turnEndHandler(broker, auth, origin, () => clock.now()) });
  const events = new EventsEndpoint(broker.events, new HostTeamAuth(d.tokens, config.hostTokenTeams), origin, { ...config.events, maxClientsPerTeam: config.tenantLimits.eventStreamsPerTeam, refused: (l) => broker.deps.metrics.limitRefused(l), clock, log });
  http.route({ method: "GET", path: "/v1/events", handler: events.handler });
  return { mcp, events };
}

/**
 * Mounts the live-view login page, its static assets and its WebSocket; with `replica`, the page and
 * socket of a flow another replica holds are forwarded there (src/login/replica/router.ts).
 */
export function mountLoginRoutes(http: HttpServer, logins: LoginService, config: Config, clock: Clock, log: Logger, replica?: LoginReplica): LiveViewEndpoint {
  const liveView = new LiveViewEndpoint(logins, { publicUrl: config.publicUrl, flowTimeoutMs: config.login.flowTimeoutMs, allowedOrigins: config.allowedOrigins, clock }, log);
  const router = replica ? new LoginRouter({ replica, logins, forwarder: new ReplicaForwarder(), liveView, log }) : undefined;
  http.route({ method: "GET", path: "/login/l", prefix: true, handler: router?.page ?? liveView.page });
  http.route({ method: "GET", path: "/login/assets", prefix: true, handler: liveView.asset });
  http.upgrade("/login/ws", router?.upgrade ?? liveView.upgrade);
  return liveView;
}
