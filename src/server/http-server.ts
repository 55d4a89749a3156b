import http from "node:http";
import type { AddressInfo } from "node:net";
import { STORE_RETRY_SECONDS } from "../broker/outcome.js";
import { errorMessage } from "../domain/errors.js";
import { randomId } from "../domain/ids.js";
import { safeRequestId } from "../log/context.js";
import type { Logger } from "../log/logger.js";
import { isStoreUnavailable } from "../store/errors.js";

/** What the server knows of the request it hands a route: its id and a logger whose lines carry it. */
export interface RequestScope {
  /** The request's id (the incoming `X-Request-Id` when safe, else generated), echoed in the response. */
  readonly requestId: string;
  /** The server's logger with `requestId` bound: every line written while serving the request goes through it. */
  readonly log: Logger;
}

/** A route handler; returns false to fall through to the next route. */
// biome-ignore-start lint/suspicious/noConfusingVoidType: handlers that return nothing are typed void, which undefined would refuse
export type RouteHandler = (
  req: http.IncomingMessage,
  res: http.ServerResponse,
  url: URL,
  scope: RequestScope,
) => Promise<boolean | void> | boolean | void;
// biome-ignore-end lint/suspicious/noConfusingVoidType: handlers that return nothing are typed void, which undefined would refuse

/** A route: a method (or "*"), a path or path prefix, and its handler. */
export interface Route {
  readonly method: string;
  readonly path: string;
  readonly prefix?: boolean;
  /** Errors the handler throws are answered as JSON-RPC errors (the MCP endpoint), not `{ error }`. */
  readonly jsonRpc?: boolean;
  readonly handler: RouteHandler;
}

/** What a request refused because the database is away is told (HTTP 503, error `store_unavailable`). */
export const STORE_UNAVAILABLE_MESSAGE = `slaude-connect's database is unavailable right now (it may be restarting), so this request was not served; retry in about ${STORE_RETRY_SECONDS} seconds.`;

/** The answer to a request whose handler threw: 503 store_unavailable when the database is away, else 500 internal_error. */
function failureAnswer(
  err: unknown,
  jsonRpc: boolean,
): { status: number; body: unknown; headers: Record<string, string> } {
  if (isStoreUnavailable(err)) {
    const headers = { "retry-after": String(STORE_RETRY_SECONDS) };
    if (jsonRpc)
      return {
        status: 503,
        headers,
        body: {
          jsonrpc: "2.0",
          error: {
            code: -32000,
            message: STORE_UNAVAILABLE_MESSAGE,
            data: { code: "store_unavailable", retryAfterSeconds: STORE_RETRY_SECONDS },
          },
          id: null,
        },
      };
    return { status: 503, headers, body: { error: "store_unavailable", message: STORE_UNAVAILABLE_MESSAGE } };
  }
  if (jsonRpc)
    return {
      status: 500,
      headers: {},
      body: {
        jsonrpc: "2.0",
        error: {
          code: -32603,
          message: "Internal error (details are in the broker's log)",
          data: { code: "internal_error" },
        },
        id: null,
      },
    };
  return { status: 500, headers: {}, body: { error: "internal_error" } };
}

/** Writes a JSON response. */
export function sendJson(
  res: http.ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store", ...headers });
  res.end(text);
}

/** The broker's HTTP server: a tiny router in front of route handlers, bound to one host and port. */
export class HttpServer {
  private readonly server: http.Server;
  private readonly routes: Route[] = [];

  constructor(private readonly log: Logger) {
    this.server = http.createServer((req, res) => void this.dispatch(req, res));
    this.server.keepAliveTimeout = 5_000;
  }

  /** Handles HTTP upgrades (WebSockets) for requests under `path`; anything else is refused. */
  upgrade(
    path: string,
    handler: (req: http.IncomingMessage, socket: import("node:stream").Duplex, head: Buffer) => void,
  ): void {
    this.server.on("upgrade", (req, socket, head) => {
      const pathname = (req.url ?? "").split("?")[0];
      if (pathname === path) handler(req, socket, head);
      else if (this.server.listenerCount("upgrade") === 1) socket.destroy();
    });
  }

  /** Adds a route; earlier routes win. */
  route(r: Route): void {
    this.routes.push(r);
  }

  private dispatch(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    // Every log line written while serving this request carries its id; the client sees it too.
    const requestId = safeRequestId(req.headers["x-request-id"]) ?? randomId();
    res.setHeader("x-request-id", requestId);
    return this.serve(req, res, { requestId, log: this.log.with({ requestId }) });
  }

  private async serve(req: http.IncomingMessage, res: http.ServerResponse, scope: RequestScope): Promise<void> {
    let url: URL;
    try {
      url = new URL(req.url ?? "/", "http://localhost");
    } catch {
      return sendJson(res, 400, { error: "bad_request" });
    }
    let route: Route | undefined;
    try {
      for (const r of this.routes) {
        const pathMatch = r.prefix
          ? url.pathname === r.path || url.pathname.startsWith(r.path.endsWith("/") ? r.path : `${r.path}/`)
          : url.pathname === r.path;
        if (!pathMatch || (r.method !== "*" && r.method !== req.method)) continue;
        route = r;
        const handled = await r.handler(req, res, url, scope);
        if (handled !== false) return;
      }
      sendJson(res, 404, { error: "not_found" });
    } catch (err) {
      // Login link paths are bearer secrets: never logged.
      const path = url.pathname.startsWith("/login/l/") ? "/login/l/[link]" : url.pathname;
      if (isStoreUnavailable(err))
        scope.log.warn("request refused: the database is unavailable", { path, error: err.message });
      else scope.log.error("http handler failed", { path, error: errorMessage(err) });
      const answer = failureAnswer(err, route?.jsonRpc === true);
      if (!res.headersSent) sendJson(res, answer.status, answer.body, answer.headers);
      else res.end();
    }
  }

  /** Listens on host:port (port 0 picks a free one) and resolves with the bound port. */
  async listen(port: number, host: string): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(port, host, () => {
        this.server.off("error", reject);
        resolve();
      });
    });
    return (this.server.address() as AddressInfo).port;
  }

  /** Stops accepting connections and closes idle ones; resolves when the server is closed. */
  async close(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeIdleConnections();
      // A real timer, not the injected Clock: it bounds real sockets' shutdown, and a test's
      // ManualClock (which nobody advances at close) must not hold the server open.
      setTimeout(() => this.server.closeAllConnections(), 2_000).unref();
    });
  }
}
