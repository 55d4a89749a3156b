import { randomBytes } from "node:crypto";
import type http from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer, type WebSocket } from "ws";
import type { Logger } from "../log/logger.js";
import type { RouteHandler } from "../server/http-server.js";
import { liveViewPage, refusalPage } from "./live-view-page.js";
import type { LoginService } from "./login-service.js";
import { clientMessage, type ServerMessage } from "./protocol.js";

const COOKIE = "slaude_login";

function readCookie(req: http.IncomingMessage): { sessionId: string; secret: string } | undefined {
  for (const part of (req.headers.cookie ?? "").split(";")) {
    const [k, v] = part.trim().split("=");
    if (k === COOKIE && v) {
      const [sessionId, secret] = v.split(".");
      if (sessionId && secret) return { sessionId, secret };
    }
  }
  return undefined;
}

const REFUSALS = {
  invalid: ["Link not valid", "This login link is not valid. Ask for a new one with /connect in Slack."],
  used: ["Link already used", "This login link was already opened. Links work once, for the person they were sent to. Ask for a new one with /connect."],
  expired: ["Link expired", "This login link has expired. Ask for a new one with /connect in Slack."],
  full: ["Busy", "Too many logins are in progress right now. Wait a minute and reload this page (the link still works)."],
} as const;

/** The live-view HTTP page and its WebSocket, mounted on the broker's server. */
export class LiveViewEndpoint {
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 });

  constructor(
    private readonly logins: LoginService,
    private readonly opts: { publicUrl: string; flowTimeoutMs: number; allowedOrigins: readonly string[] },
    private readonly log: Logger,
  ) {}

  /** GET /login/l/<token>: consumes the link for this browser and serves the page. */
  readonly page: RouteHandler = async (req, res, url) => {
    const token = url.pathname.slice("/login/l/".length);
    const cookie = readCookie(req);
    const result = await this.logins.open(token, cookie?.secret);
    const headers = { "cache-control": "no-store", "referrer-policy": "no-referrer", "x-frame-options": "DENY", "x-content-type-options": "nosniff" };
    if ("refused" in result) {
      const [title, message] = REFUSALS[result.refused];
      res.writeHead(result.refused === "full" ? 503 : result.refused === "invalid" ? 404 : 410, { ...headers, "content-type": "text/html; charset=utf-8" });
      res.end(refusalPage(title, message));
      return;
    }
    const nonce = randomBytes(16).toString("base64");
    const secure = this.opts.publicUrl.startsWith("https:") ? "; Secure" : "";
    res.writeHead(200, {
      ...headers,
      "content-type": "text/html; charset=utf-8",
      "content-security-policy": `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
      "set-cookie": `${COOKIE}=${result.session.id}.${result.viewerSecret}; Path=/login; HttpOnly; SameSite=Strict; Max-Age=${Math.ceil(this.opts.flowTimeoutMs / 1000)}${secure}`,
    });
    const service = result.session.service;
    res.end(liveViewPage({ sessionId: result.session.id, serviceName: service, nonce }));
  };

  /** Upgrade handler for /login/ws: only the browser holding the session's viewer cookie is attached. */
  readonly upgrade = (req: http.IncomingMessage, socket: Duplex, head: Buffer): void => {
    void (async () => {
      const origin = req.headers.origin;
      const allowed = new Set([new URL(this.opts.publicUrl).origin, ...this.opts.allowedOrigins]);
      const host = req.headers.host;
      const sameHost = origin !== undefined && host !== undefined && (origin === `http://${host}` || origin === `https://${host}`);
      if (!origin || !(allowed.has(origin) || sameHost)) return reject(socket, 403);
      const sid = new URL(req.url ?? "/", "http://x").searchParams.get("s");
      const cookie = readCookie(req);
      if (!sid || !cookie || cookie.sessionId !== sid) return reject(socket, 401);
      const session = await this.logins.viewerMatches(sid, cookie.secret);
      if (!session) return reject(socket, 401);
      this.wss.handleUpgrade(req, socket, head, (ws) => this.run(ws, session.id, session));
    })().catch((err: unknown) => {
      this.log.warn("live-view upgrade failed", { error: (err as Error).message });
      reject(socket, 500);
    });
  };

  private run(ws: WebSocket, sessionId: string, session: Parameters<LoginService["attach"]>[0]): void {
    const send = (m: ServerMessage) => {
      if (ws.readyState !== ws.OPEN) return;
      // Drop frames when the viewer cannot keep up; status messages always go through.
      if (m.type === "frame" && ws.bufferedAmount > 2_000_000) return;
      ws.send(JSON.stringify(m));
    };
    let attached = false;
    ws.on("message", (data) => {
      let doc: unknown;
      try {
        doc = JSON.parse(String(data));
      } catch {
        return;
      }
      const m = clientMessage.safeParse(doc);
      if (!m.success) return;
      if (!attached && m.data.type === "viewport") {
        attached = true;
        void this.logins.attach(session, send, { width: m.data.width, height: m.data.height });
        return;
      }
      if (!attached) {
        attached = true;
        void this.logins.attach(session, send, { width: 1024, height: 768 });
      }
      void this.logins.input(sessionId, m.data).catch((err: unknown) => this.log.warn("live-view input failed", { error: (err as Error).message }));
    });
    ws.on("close", () => this.logins.detach(sessionId));
  }

  close(): void {
    for (const c of this.wss.clients) c.terminate();
    this.wss.close();
  }
}

function reject(socket: Duplex, status: number): void {
  socket.end(`HTTP/1.1 ${status} ${status === 403 ? "Forbidden" : status === 401 ? "Unauthorized" : "Error"}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
}
