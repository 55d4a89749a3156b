import { VERSION } from "../domain/version.js";
import type { PrometheusMetrics } from "../metrics/prometheus.js";
import type { OriginGuard } from "../server/host-auth.js";
import { type HttpServer, sendJson } from "../server/http-server.js";
import { metricsHandler } from "../server/metrics-endpoint.js";
import { Readiness, type SlackAuthState } from "../server/readiness.js";
import type { InstallationHealth } from "../store/installation-records.js";
import type { Store } from "../store/store.js";

/** What the probes read: the store, how many services are loaded, Slack's auth check and the installations' health. */
export interface ProbeDeps {
  readonly store: Pick<Store, "ping">;
  readonly services: () => number;
  readonly slack: SlackAuthState | undefined;
  readonly installations?: () => Promise<InstallationHealth>;
  readonly metrics: PrometheusMetrics;
  readonly metricsToken: string | undefined;
  readonly origin: OriginGuard;
}

/** Mounts GET /healthz (liveness), /readyz (readiness, with its conditions in the body) and /metrics (token-guarded). */
export function mountProbes(http: HttpServer, d: ProbeDeps): void {
  http.route({
    method: "GET",
    path: "/healthz",
    // Liveness only: answered from the event loop, never from the database, so a database outage
    // (which /readyz reports) does not get every replica restarted by its liveness probe.
    handler: (_req, res) => sendJson(res, 200, { status: "ok", version: VERSION }),
  });
  // Ready = migrated and answering, services loaded, Slack (when configured) authenticated.
  const readiness = new Readiness({
    dbAnswers: () => d.store.ping(),
    services: d.services,
    slack: d.slack,
    ...(d.installations ? { installations: d.installations } : {}),
  });
  http.route({
    method: "GET",
    path: "/readyz",
    handler: async (_req, res) => {
      const r = await readiness.report();
      sendJson(res, r.ready ? 200 : 503, { status: r.ready ? "ready" : "not_ready", ...r.checks });
    },
  });
  http.route({ method: "GET", path: "/metrics", handler: metricsHandler(d.metrics, d.metricsToken, d.origin) });
}
