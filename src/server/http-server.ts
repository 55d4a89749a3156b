import http from "node:http";
import type { AddressInfo } from "node:net";
import { randomId } from "../domain/ids.js";
import { safeRequestId, withLogContext } from "../log/context.js";
import type { Logger } from "../log/logger.js";

/** A route handler; returns false to fall through to the next route. */
export type RouteHandler = (req: http.IncomingMessage, res: http.ServerResponse, url: URL) => Promise<boolean | void> | boolean | void;

/** A route: a method (or "*"), a path or path prefix, and its handler. */
export interface Route {
  readonly method: string;
  readonly path: string;
  readonly prefix?: boolean;
  readonly handler: RouteHandler;
}

/** Writes a JSON response. */
export function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
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
  upgrade(path: string, handler: (req: http.IncomingMessage, socket: import("node:stream").Duplex, head: Buffer) => void): void {
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
    return withLogContext({ requestId }, () => this.serve(req, res));
  }

  private async serve(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    let url: URL;
    try {
      url = new URL(req.url ?? "/", "http://localhost");
    } catch {
      return sendJson(res, 400, { error: "bad_request" });
    }
    try {
      for (const r of this.routes) {
        const pathMatch = r.prefix ? url.pathname === r.path || url.pathname.startsWith(r.path.endsWith("/") ? r.path : r.path + "/") : url.pathname === r.path;
        if (!pathMatch || (r.method !== "*" && r.method !== req.method)) continue;
        const handled = await r.handler(req, res, url);
        if (handled !== false) return;
      }
      sendJson(res, 404, { error: "not_found" });
    } catch (err) {
      // Login link paths are bearer secrets: never logged.
      const path = url.pathname.startsWith("/login/l/") ? "/login/l/[link]" : url.pathname;
      this.log.error("http handler failed", { path, error: (err as Error).message });
      if (!res.headersSent) sendJson(res, 500, { error: "internal_error" });
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
