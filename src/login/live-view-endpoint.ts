// The live-view HTTP page, its static assets and its WebSocket, mounted on the broker's server by
// src/app (the handlers are plain node:http functions: this layer does not import the server's).

import { randomBytes } from "node:crypto";
import type http from "node:http";
import type { Duplex } from "node:stream";
import { parse as parseCookies, serialize as serializeCookie } from "cookie";
import { type WebSocket, WebSocketServer } from "ws";
import { type Clock, systemClock } from "../clock/clock.js";
import { errorMessage } from "../domain/errors.js";
import type { Logger } from "../log/logger.js";
import type { Viewer } from "./flow-registry.js";
import { InputQueue } from "./input-queue.js";
import { LiveViewAssets } from "./live-view-page.js";
import type { LoginService } from "./login-service.js";
import { type ClientMessage, clientMessage, type ServerMessage } from "./protocol.js";
import { traceLogin } from "./trace.js";

const COOKIE = "slaude_login";
/** Inputs one socket may have waiting; a page sends at most ~25 a second, so only a flood reaches it. */
export const MAX_QUEUED_INPUTS = 128;
/** How often a socket must answer a ping; a dead one is dropped so the viewer can reattach. */
export const HEARTBEAT_MS = 15_000;
const ASSETS_PATH = "/login/assets/";

/** A handler of one HTTP request (structurally the broker server's RouteHandler). */
export type LiveViewHandler = (req: http.IncomingMessage, res: http.ServerResponse, url: URL) => Promise<void>;

/** Settings of the live-view endpoint. */
export interface LiveViewSettings {
  readonly publicUrl: string;
  readonly flowTimeoutMs: number;
  readonly allowedOrigins: readonly string[];
  /** Paces the socket heartbeat (default the system clock). */
  readonly clock?: Clock;
  /** The page and its files (default: static/login/ of the package). */
  readonly assets?: LiveViewAssets;
}

/** The viewer cookie of a request: the session it opened and its viewer secret. */
export function readViewerCookie(req: http.IncomingMessage): { sessionId: string; secret: string } | undefined {
  const v = parseCookies(req.headers.cookie ?? "")[COOKIE];
  const [sessionId, secret] = v?.split(".") ?? [];
  return sessionId && secret ? { sessionId, secret } : undefined;
}

const REFUSALS = {
  invalid: ["Link not valid", "This login link is not valid. Ask for a new one with /connect in Slack."],
  used: [
    "Link already used",
    "This login link was already opened. Links work once, for the person they were sent to. Ask for a new one with /connect.",
  ],
  expired: ["Link expired", "This login link has expired. Ask for a new one with /connect in Slack."],
  full: [
    "Busy",
    "Too many logins are in progress right now. Wait a minute and reload this page (the link still works).",
  ],
  unreachable: [
    "Login unavailable",
    "Your login is running on another slaude-connect server that cannot be reached right now. Reload this page in a minute.",
  ],
  misrouted: [
    "Login unavailable",
    "This login could not be reached. Reload this page; if it keeps failing, ask for a new link with /connect in Slack.",
  ],
  ended: [
    "Login ended",
    "This login has ended (it was cancelled, timed out, or left without a viewer). Ask for a new link with /connect in Slack.",
  ],
} as const;

const HEADERS = {
  "cache-control": "no-store",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
} as const;

/** The live-view HTTP page, its assets and its WebSocket, mounted on the broker's server. */
export class LiveViewEndpoint {
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 });
  private readonly clock: Clock;
  private readonly assets: LiveViewAssets;

  constructor(
    private readonly logins: LoginService,
    private readonly opts: LiveViewSettings,
    private readonly log: Logger,
  ) {
    this.clock = opts.clock ?? systemClock;
    this.assets = opts.assets ?? new LiveViewAssets();
  }

  /** GET /login/l/<token>: consumes the link for this browser and serves the page. */
  readonly page: LiveViewHandler = async (req, res, url) => {
    const token = url.pathname.slice("/login/l/".length);
    const cookie = readViewerCookie(req);
    const result = await this.logins.open(token, cookie?.secret);
    if ("refused" in result) return this.refuse(res, result.refused);
    const nonce = randomBytes(16).toString("base64");
    res.writeHead(200, {
      ...HEADERS,
      "content-type": "text/html; charset=utf-8",
      "content-security-policy": `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
      "set-cookie": serializeCookie(COOKIE, `${result.session.id}.${result.viewerSecret}`, {
        path: "/login",
        httpOnly: true,
        sameSite: "strict",
        maxAge: Math.ceil(this.opts.flowTimeoutMs / 1000),
        secure: this.opts.publicUrl.startsWith("https:"),
      }),
    });
    res.end(this.assets.page({ sessionId: result.session.id, serviceName: result.session.service, nonce }));
    traceLogin("page_served", result.session.id);
  };

  /** Answers a page request with a refusal page (its status follows the reason). */
  refuse(res: http.ServerResponse, why: keyof typeof REFUSALS): void {
    const [title, message] = REFUSALS[why];
    const status =
      why === "invalid" ? 404 : why === "full" || why === "unreachable" ? 503 : why === "misrouted" ? 502 : 410;
    res.writeHead(status, {
      ...HEADERS,
      "content-type": "text/html; charset=utf-8",
      "content-security-policy":
        "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    });
    res.end(this.assets.refusal(title, message));
  }

  /** GET /login/assets/<file>: the page's script and stylesheet (an allowlist, nothing else is read). */
  readonly asset: LiveViewHandler = async (_req, res, url) => {
    const a = url.pathname.startsWith(ASSETS_PATH)
      ? this.assets.asset(url.pathname.slice(ASSETS_PATH.length))
      : undefined;
    if (!a) {
      res.writeHead(404, { ...HEADERS, "content-type": "text/plain; charset=utf-8" });
      res.end("not found");
      return;
    }
    // Versioned by content (`?v=`) and pinned by SRI in the page, so a cached copy is never stale.
    res.writeHead(200, {
      ...HEADERS,
      "cache-control": "public, max-age=3600",
      "content-type": a.contentType,
      "content-length": String(a.body.length),
    });
    res.end(a.body);
  };

  /** Upgrade handler for /login/ws: only the browser holding the session's viewer cookie is attached. */
  readonly upgrade = (req: http.IncomingMessage, socket: Duplex, head: Buffer): void => {
    void (async () => {
      const origin = req.headers.origin;
      const allowed = new Set([new URL(this.opts.publicUrl).origin, ...this.opts.allowedOrigins]);
      const host = req.headers.host;
      const sameHost =
        origin !== undefined && host !== undefined && (origin === `http://${host}` || origin === `https://${host}`);
      if (!origin || !(allowed.has(origin) || sameHost)) return reject(socket, 403);
      const query = new URL(req.url ?? "/", "http://x").searchParams;
      const sid = query.get("s");
      const cookie = readViewerCookie(req);
      if (!sid || !cookie || cookie.sessionId !== sid) return reject(socket, 401);
      const session = await this.logins.viewerMatches(sid, cookie.secret);
      if (!session) return reject(socket, 401);
      const viewport = viewportOf(query);
      this.wss.handleUpgrade(req, socket, head, (ws) => this.run(ws, session.id, viewport));
    })().catch((err: unknown) => {
      this.log.warn("live-view upgrade failed", { error: errorMessage(err) });
      reject(socket, 500);
    });
  };

  /** Runs one viewer socket; one whose URL gave its viewport is attached at once (else on its first message). */
  private run(ws: WebSocket, sessionId: string, viewport?: { width: number; height: number }): void {
    traceLogin("socket_open", sessionId);
    const send = (m: ServerMessage) => {
      if (ws.readyState !== ws.OPEN) return;
      // Drop frames when the viewer cannot keep up; status messages always go through.
      if (m.type === "frame" && ws.bufferedAmount > 2_000_000) return;
      ws.send(JSON.stringify(m));
    };
    const claimed = this.logins.claim(sessionId);
    if (claimed === "busy" || claimed === "gone") {
      // One live socket per flow: a second tab (or a replayed cookie) never drives or starts anything.
      send(
        claimed === "busy"
          ? {
              type: "status",
              state: "refused",
              message:
                "This login is already open in another tab or window. Use that one, or close it and reload this page.",
            }
          : {
              type: "status",
              state: "failed",
              message: "This login is no longer running. Ask for a new link with /connect in Slack.",
            },
      );
      ws.close(claimed === "busy" ? 4409 : 4410, claimed);
      return;
    }
    const viewer: Viewer = claimed;
    const warn = (what: string) => (err: unknown) => this.log.warn(what, { sessionId, error: errorMessage(err) });
    const inputs = new InputQueue<ClientMessage>(
      MAX_QUEUED_INPUTS,
      (m) => this.logins.input(viewer, m),
      warn("live-view input failed"),
    );
    let attached = false;
    const attach = (size: { width: number; height: number }) => {
      attached = true;
      this.logins.attach(viewer, send, size).catch(warn("live-view attach failed"));
    };
    // The page names its viewport in the socket's URL, so its browser starts without waiting for
    // the round trip of a first message.
    if (viewport) attach(viewport);
    let alive = true;
    const heartbeat = this.clock.setInterval(
      () => {
        if (!alive) return ws.terminate();
        alive = false;
        ws.ping();
      },
      HEARTBEAT_MS,
      { unref: true },
    );
    ws.on("pong", () => (alive = true));
    ws.on("message", (data) => {
      if (ws.readyState !== ws.OPEN) return;
      let doc: unknown;
      try {
        doc = JSON.parse(String(data));
      } catch {
        return;
      }
      const m = clientMessage.safeParse(doc);
      if (!m.success) return;
      if (!attached) {
        attach(
          m.data.type === "viewport" ? { width: m.data.width, height: m.data.height } : { width: 1024, height: 768 },
        );
        if (m.data.type === "viewport") return;
      }
      // Cancel jumps the queue: stopping must not wait behind a burst of input.
      if (m.data.type === "cancel")
        return void this.logins.input(viewer, m.data).catch(warn("live-view cancel failed"));
      if (!inputs.push(m.data)) {
        this.log.warn("live-view input flood: socket closed", { sessionId, queued: inputs.size });
        inputs.clear();
        ws.close(1008, "too much input");
      }
    });
    ws.on("close", () => {
      heartbeat.cancel();
      inputs.clear();
      this.logins.detach(viewer);
    });
  }

  /** Drops every live-view socket (shutdown). */
  close(): void {
    for (const c of this.wss.clients) c.terminate();
    this.wss.close();
  }
}

/** The viewport a socket's URL names (`w`, `h`), validated as a viewport message is; undefined when absent or invalid. */
function viewportOf(query: URLSearchParams): { width: number; height: number } | undefined {
  const w = query.get("w");
  const h = query.get("h");
  if (w === null || h === null || !/^\d{1,5}$/.test(w) || !/^\d{1,5}$/.test(h)) return undefined;
  const m = clientMessage.safeParse({ type: "viewport", width: Number(w), height: Number(h) });
  return m.success && m.data.type === "viewport" ? { width: m.data.width, height: m.data.height } : undefined;
}

/** Refuses an upgrade with `status` and closes the socket. */
export function reject(socket: Duplex, status: number): void {
  socket.end(
    `HTTP/1.1 ${status} ${status === 403 ? "Forbidden" : status === 401 ? "Unauthorized" : status === 503 ? "Service Unavailable" : "Error"}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`,
  );
}
