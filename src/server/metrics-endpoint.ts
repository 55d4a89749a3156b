import type { PrometheusMetrics } from "../metrics/prometheus.js";
import { HostTokenAuth, type OriginGuard } from "./host-auth.js";
import { type RouteHandler, sendJson } from "./http-server.js";

/**
 * GET /metrics: the Prometheus exposition, only for a scraper presenting `SLAUDE_METRICS_TOKEN`
 * as a bearer token (through the same Host/Origin guard as every host route). Without a
 * configured token the route refuses everyone: fail closed, nothing is served by default.
 */
export function metricsHandler(
  metrics: PrometheusMetrics,
  token: string | undefined,
  origin: OriginGuard,
): RouteHandler {
  const auth = new HostTokenAuth(token ? [token] : []);
  return async (req, res) => {
    const o = origin.check(req);
    if (o !== "ok") return sendJson(res, 403, { error: o });
    if (!auth.configured)
      return sendJson(res, 403, { error: "metrics_disabled", message: "set SLAUDE_METRICS_TOKEN to enable /metrics" });
    if (!auth.verify(req))
      return sendJson(
        res,
        401,
        { error: "unauthorized" },
        { "www-authenticate": 'Bearer realm="slaude-connect metrics"' },
      );
    const { contentType, body } = await metrics.text();
    res.writeHead(200, { "content-type": contentType, "cache-control": "no-store" });
    res.end(body);
  };
}
