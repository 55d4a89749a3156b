// Tiny HTTP servers on 127.0.0.1 for the confined-browser tests: the "allowed" site with fixed-layout
// pages (so tests know where to click in frame pixels), and an "other" server that must never be
// reached. Both record every request, WebSocket upgrade included.
import http from "node:http";
import type { AddressInfo } from "node:net";

/** One request a server received. */
export interface SeenRequest {
  readonly host: string;
  readonly method: string;
  readonly path: string;
  readonly body: string;
}

/** A recording server; `pages` maps a path (without query) to a handler. */
export interface Site {
  readonly port: number;
  readonly requests: SeenRequest[];
  /** Paths (with query) of the requests seen so far. */
  paths(): string[];
  close(): Promise<void>;
}

type Handler = (req: SeenRequest, res: http.ServerResponse) => void;

/** Starts a recording server on 127.0.0.1 with an ephemeral port. */
export async function startSite(pages: (port: number) => Record<string, Handler>): Promise<Site> {
  const requests: SeenRequest[] = [];
  let table: Record<string, Handler> = {};
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const seen = {
        host: req.headers.host ?? "",
        method: req.method ?? "GET",
        path: req.url ?? "/",
        body: Buffer.concat(chunks).toString("utf8"),
      };
      requests.push(seen);
      const handler = table[seen.path.split("?")[0] ?? "/"];
      if (handler) handler(seen, res);
      else {
        res.writeHead(204);
        res.end();
      }
    });
  });
  server.on("upgrade", (req, socket) => {
    requests.push({ host: req.headers.host ?? "", method: "UPGRADE", path: req.url ?? "/", body: "" });
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  table = pages(port);
  return {
    port,
    requests,
    paths: () => requests.map((r) => r.path),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Serves `body` as an HTML page (margin 0, so CSS pixel positions are page coordinates) that
 * requests `/ready?<its path>` once loaded.
 */
export function html(body: string, headers: Record<string, string | string[]> = {}): Handler {
  return (_req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store", ...headers });
    res.end(
      `<!doctype html><html><head><meta charset="utf-8"><title>t</title></head><body style="margin:0;width:100vw;height:100vh">${body}` +
        `<script>addEventListener("load", () => fetch("/ready?" + location.pathname));</script></body></html>`,
    );
  };
}

/** Answers with a redirect to `location`. */
export function redirect(location: string): Handler {
  return (_req, res) => {
    res.writeHead(302, { location, "cache-control": "no-store" });
    res.end();
  };
}

/** An absolutely positioned element's style: a box at (left, top) of size (w, h), CSS pixels. */
export function box(left: number, top: number, w: number, h: number): string {
  return `position:absolute;left:${left}px;top:${top}px;width:${w}px;height:${h}px;margin:0;padding:0;box-sizing:border-box`;
}
