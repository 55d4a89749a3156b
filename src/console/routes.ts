import type http from "node:http";
import type { OriginGuard } from "../server/host-auth.js";
import { type RouteHandler, sendJson } from "../server/http-server.js";
import type { ActivityApi } from "./activity-api.js";
import type { ConsoleAuth, ConsoleSession } from "./auth.js";
import type { ConnectionsApi } from "./connections-api.js";
import { refuse } from "./http.js";
import type { PinsApi } from "./pins-api.js";
import type { PlayApi } from "./play-api.js";
import type { SseHub } from "./sse.js";
import type { StandingApi } from "./standing.js";
import type { StaticFile } from "./static-files.js";

// The /console router: Host/Origin first (as on /mcp), then the session cookie on everything but
// the token link, then the CSRF header on every state-changing request.

/** Headers on every console response: no framing, no sniffing, scripts and styles only from here. */
const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
} as const;

/** What the console router dispatches to. */
export interface ConsoleRouterDeps {
  readonly auth: ConsoleAuth;
  readonly origin: OriginGuard;
  readonly files: ReadonlyMap<string, StaticFile>;
  readonly play: PlayApi;
  readonly connections: ConnectionsApi;
  /** The admins' Tool changes panel (tool pinning). */
  readonly pins: PinsApi;
  /** The Services panel: each service's next-call standing, decided by the broker's policy. */
  readonly standing: StandingApi;
  readonly events: SseHub;
  readonly teamId: string;
  /** How long a call waits for an owner's answer (the page shows the time left). */
  readonly approvalTimeoutMs: number;
  /** The Activity tab: calls per minute by outcome, latency p50/p95. */
  readonly activity: ActivityApi;
}

type Api = (req: http.IncomingMessage, res: http.ServerResponse, url: URL, s: ConsoleSession) => Promise<void> | void;

/** Builds the handler of every request under /console. */
export function consoleHandler(d: ConsoleRouterDeps): RouteHandler {
  const get: Record<string, Api> = {
    session: (_q, res, _u, s) =>
      sendJson(res, 200, { csrf: s.csrf, teamId: d.teamId, approvalTimeoutMs: d.approvalTimeoutMs }),
    workspace: (_q, res) => d.play.workspace(res),
    threads: (_q, res, url) => d.play.threads(res, url),
    inbox: (_q, res, url) => d.play.inbox(res, url),
    notes: (_q, res, url) => d.play.notes(res, url),
    connections: (_q, res, url) => d.connections.list(res, url),
    audit: (_q, res, url) => d.connections.audit(res, url),
    runs: (_q, res, url) => d.connections.runs(res, url),
    standing: (_q, res, url) => d.standing.standing(res, url),
    "tool-changes": (_q, res, url) => d.pins.list(res, url),
    events: (_req, res) => d.events.open(res),
    activity: (_q, res, url) => d.activity.get(res, url),
  };
  const post: Record<string, Api> = {
    membership: (req, res) => d.play.membership(req, res),
    threads: (req, res) => d.play.startThread(req, res),
    host: (req, res) => d.play.host(req, res),
    decide: (req, res) => d.play.decide(req, res),
    continue: (req, res) => d.play.continueConsent(req, res),
    revoke: (req, res) => d.connections.revoke(req, res),
    "tool-decision": (req, res) => d.pins.decide(req, res),
  };

  return async (req, res, url) => {
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) res.setHeader(k, v);
    const o = d.origin.check(req);
    if (o !== "ok")
      return refuse(
        res,
        403,
        o,
        o === "bad_host" ? "This Host is not served." : "Requests from other origins are refused.",
      );
    const path = url.pathname;
    if (path === "/console") {
      res.writeHead(308, { location: `/console/${url.search}` }).end();
      return;
    }
    if (path === "/console/" && url.searchParams.has("token")) return signIn(d.auth, url, res);
    const session = d.auth.session(req);
    if (path.startsWith("/console/api/")) {
      const name = path.slice("/console/api/".length);
      if (!session) return refuse(res, 401, "no_session", "Open the console link printed when the server started.");
      const table = req.method === "GET" ? get : req.method === "POST" ? post : undefined;
      const api = table && Object.hasOwn(table, name) ? table[name] : undefined;
      if (!api) return refuse(res, 404, "not_found", "No such console endpoint.");
      if (req.method !== "GET" && !d.auth.csrfMatches(req, session))
        return refuse(res, 403, "csrf", "The request is missing its console CSRF token.");
      return api(req, res, url, session);
    }
    if (req.method !== "GET") return refuse(res, 405, "method_not_allowed", "Only GET is served here.");
    const file = d.files.get(path === "/console/" ? "index.html" : path.slice("/console/".length));
    // The sign-in page's stylesheet is the only asset served without a session.
    if (!session && !(file && path === "/console/console.css")) return sendStatic(res, 401, d.files.get("signin.html"));
    if (!file) return refuse(res, 404, "not_found", "No such console page.");
    sendStatic(res, 200, file);
  };
}

/** The token link: a matching token sets the session cookie and drops the token from the address bar. */
function signIn(auth: ConsoleAuth, url: URL, res: http.ServerResponse): void {
  const token = url.searchParams.get("token") ?? "";
  if (!auth.tokenMatches(token)) {
    refuse(res, 401, "bad_token", "This console link is not valid (the token changes at every start).");
    return;
  }
  res.writeHead(303, { location: "/console/", "set-cookie": auth.signIn(), "cache-control": "no-store" }).end();
}

function sendStatic(res: http.ServerResponse, status: number, file: StaticFile | undefined): void {
  if (!file) {
    refuse(res, status, "no_session", "Open the console link printed when the server started.");
    return;
  }
  res.writeHead(status, {
    "content-type": file.type,
    "cache-control": "no-store",
    "content-length": String(file.body.length),
  });
  res.end(file.body);
}
