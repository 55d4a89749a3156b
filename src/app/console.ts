import type { BrokerDeps } from "../broker/deps.js";
import type { Clock } from "../clock/clock.js";
import type { Config } from "../config/env.js";
import type { ConnectionLifecycle } from "../connections/lifecycle.js";
import { ActivityApi } from "../console/activity-api.js";
import { AuditTail } from "../console/audit-tail.js";
import { ConsoleAuth } from "../console/auth.js";
import { ConnectionsApi } from "../console/connections-api.js";
import { HostAgent } from "../console/host-agent.js";
import { PinsApi } from "../console/pins-api.js";
import { PlayApi } from "../console/play-api.js";
import type { ConsoleAdmins, ConsoleWorkspace } from "../console/ports.js";
import { consoleHandler } from "../console/routes.js";
import { SseHub } from "../console/sse.js";
import { StandingApi } from "../console/standing.js";
import { loadStaticFiles } from "../console/static-files.js";
import type { Logger } from "../log/logger.js";
import { PinReview } from "../pinning/review.js";
import type { PinService } from "../pinning/service.js";
import { OriginGuard } from "../server/host-auth.js";
import type { HttpServer } from "../server/http-server.js";
import type { Store } from "../store/store.js";

// Wires the console (src/console) into the broker's HTTP server. Only called when the local
// workspace runs, which never happens in production: there is no /console route at all then.
// It starts once the server listens: the Origin rule and the host agent need the bound port.

/** What the console is built from. */
export interface ConsoleWiring {
  readonly http: HttpServer;
  /** The port the server listens on. */
  readonly port: number;
  readonly config: Config;
  readonly workspace: ConsoleWorkspace;
  readonly admins: ConsoleAdmins;
  readonly store: Store;
  readonly lifecycle: ConnectionLifecycle;
  /** The broker's pin service: the Tool changes panel decides through it. */
  readonly pins: PinService;
  /** The host token the console's agent host presents to /mcp and /v1/turns. */
  readonly hostToken: () => string | undefined;
  /** The broker's dependencies: the Services panel gathers facts and decides as a call does. */
  readonly broker: BrokerDeps;
  readonly clock: Clock;
  readonly log: Logger;
}

/** The running console: its sign-in link (it holds the console token, printed once) and its shutdown. */
export interface RunningConsole {
  readonly url: string;
  close(): Promise<void>;
}

/** The address the console's host agent reaches this server on (loopback when bound to all interfaces). */
function selfUrl(bindHost: string, port: number): string {
  if (bindHost === "0.0.0.0" || bindHost === "127.0.0.1" || bindHost === "localhost") return `http://127.0.0.1:${port}`;
  if (bindHost === "::" || bindHost === "::1") return `http://[::1]:${port}`;
  return `http://${bindHost.includes(":") ? `[${bindHost}]` : bindHost}:${port}`;
}

/** The same Host/Origin rule as /mcp, also accepting the loopback origins of the bound port
 * (the link printed at start-up names 127.0.0.1 whatever SLAUDE_PUBLIC_URL says). */
function consoleOrigin(w: ConsoleWiring): OriginGuard {
  const { port } = w;
  const loopback = [`http://127.0.0.1:${port}`, `http://localhost:${port}`, `http://[::1]:${port}`];
  return new OriginGuard({
    publicUrl: w.config.publicUrl,
    port,
    allowedHosts: w.config.allowedHosts,
    allowedOrigins: [...w.config.allowedOrigins, ...loopback],
  });
}

/** The console's APIs, one per panel, over the workspace, the store and the console's own host agent. */
function consoleApis(w: ConsoleWiring, host: HostAgent, events: SseHub) {
  const review = new PinReview({ pins: w.pins, admins: w.admins, store: w.store, clock: w.clock });
  const { workspace, store, clock } = w;
  return {
    play: new PlayApi({ workspace, host, events }),
    connections: new ConnectionsApi({ workspace, admins: w.admins, store, lifecycle: w.lifecycle, clock }),
    pins: new PinsApi({ workspace, review }),
    standing: new StandingApi({ workspace, broker: w.broker }),
    activity: new ActivityApi({ audit: store.audit, teamId: workspace.teamId, clock }),
  };
}

/** Registers `/console` on the listening server and starts its audit tail and event streams. */
export async function startConsole(w: ConsoleWiring): Promise<RunningConsole> {
  const base = selfUrl(w.config.bindHost, w.port);
  const files = loadStaticFiles();
  const events = new SseHub(w.clock);
  const token = ConsoleAuth.newToken();
  const auth = new ConsoleAuth(token, w.port, w.config.publicUrl.startsWith("https:"));
  const host = new HostAgent({
    baseUrl: base,
    hostToken: w.hostToken,
    callTimeoutMs: w.config.approvalTimeoutMs + w.config.pool.callTimeoutMs + 30_000,
    log: w.log,
  });
  const tail = new AuditTail(w.store.audit, w.workspace.teamId, events, w.clock, w.log);
  await tail.start();
  const unsubscribe = w.workspace.subscribe((e) => events.broadcast({ type: e.type, data: e }));
  const teamId = w.workspace.teamId;
  const { approvalTimeoutMs } = w.config;
  const apis = consoleApis(w, host, events);
  const handler = consoleHandler({ auth, origin: consoleOrigin(w), files, ...apis, events, teamId, approvalTimeoutMs });
  w.http.route({ method: "*", path: "/console", prefix: true, handler });
  return {
    url: `${base}/console/?token=${token}`,
    async close() {
      unsubscribe();
      tail.stop();
      events.close();
      await host.close();
    },
  };
}
