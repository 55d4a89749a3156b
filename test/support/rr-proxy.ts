// A tiny round-robin load balancer on loopback, as an operator would put in front of replicas: every
// request (and every WebSocket upgrade) goes to the next backend, with no stickiness. Like a real
// balancer it skips a backend marked down and retries the next one when a connection is refused
// (nothing was sent, so the retry is safe); it never retries once a request reached a backend.
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import net, { type AddressInfo } from "node:net";

/** Where one request went: the tests read it to prove requests of one session reached several replicas. */
export interface ProxyRoute {
  readonly seq: number;
  readonly method: string;
  readonly path: string;
  /** Index of the backend that received it. */
  readonly backend: number;
  readonly sessionId: string | undefined;
  /** The JSON-RPC method of a POST body, when it has one (`initialize`, `tools/call`, …). */
  readonly rpcMethod: string | undefined;
  readonly upgrade: boolean;
}

type MutableRoute = { -readonly [K in keyof ProxyRoute]: ProxyRoute[K] };

/** A running proxy. `backends` may be set after it listens (replicas need its URL before they start). */
export interface RoundRobinProxy {
  readonly url: string;
  readonly port: number;
  /** The most recent routes, oldest first (bounded: the last {@link MAX_ROUTES}). */
  readonly routes: readonly ProxyRoute[];
  setBackends(ports: readonly number[]): void;
  /** A balancer's health check: a backend marked down gets no new request. */
  setDown(index: number, down: boolean): void;
  close(): Promise<void>;
}

/** Routes kept for inspection; older ones are dropped. */
export const MAX_ROUTES = 20_000;
/** A request body larger than this is refused (413): the proxy buffers bodies to retry refused connections. */
const MAX_BODY = 8 * 1024 * 1024;

/** Starts the proxy on 127.0.0.1 (a free port unless `port` is given). */
export async function startRoundRobinProxy(port = 0): Promise<RoundRobinProxy> {
  let backends: number[] = [];
  const down = new Set<number>();
  const routes: ProxyRoute[] = [];
  let next = 0;
  let seq = 0;
  const sockets = new Set<net.Socket>();

  /** The backends to try for one request, starting with the next in turn, healthy ones only. */
  const order = (): number[] => {
    const n = backends.length;
    const start = next++ % Math.max(n, 1);
    return Array.from({ length: n }, (_, k) => (start + k) % n).filter((i) => !down.has(i));
  };
  const record = (r: MutableRoute): void => {
    r.seq = ++seq;
    routes.push(r);
    if (routes.length > MAX_ROUTES) routes.splice(0, routes.length - MAX_ROUTES);
  };

  const forward = (req: IncomingMessage, res: ServerResponse, body: Buffer, tries: number[]): void => {
    const backend = tries.shift();
    if (backend === undefined) {
      res.writeHead(502, { "content-type": "text/plain" }).end("no backend reachable");
      return;
    }
    const upstream = http.request({
      host: "127.0.0.1",
      port: backends[backend],
      method: req.method,
      path: req.url,
      headers: req.headers,
      agent: false,
    });
    let connected = false;
    // Recorded once the backend has the request (a call waiting for approval has no response yet);
    // an initialize learns its session id from the response.
    const route: MutableRoute = {
      seq: 0,
      method: req.method ?? "",
      path: req.url ?? "",
      backend,
      sessionId: header(req, "mcp-session-id"),
      rpcMethod: rpcMethodOf(body),
      upgrade: false,
    };
    upstream.on("socket", (s) =>
      s.once("connect", () => {
        connected = true;
        record(route);
      }),
    );
    upstream.on("response", (up) => {
      route.sessionId ??= header(up, "mcp-session-id");
      res.writeHead(up.statusCode ?? 502, up.rawHeaders);
      up.pipe(res);
      up.on("error", () => res.destroy());
    });
    upstream.on("error", (err: NodeJS.ErrnoException) => {
      if (!connected && err.code === "ECONNREFUSED") return forward(req, res, body, tries);
      // The backend died mid-request: the client sees a broken response, as behind a real balancer.
      res.destroy();
    });
    // The client went away (an aborted SSE stream): stop the upstream request too.
    res.on("close", () => upstream.destroy());
    upstream.end(body);
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) {
        res.writeHead(413).end();
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => forward(req, res, Buffer.concat(chunks), order()));
    req.on("error", () => res.destroy());
  });

  server.on("upgrade", (req: IncomingMessage, client: net.Socket, head: Buffer) => {
    sockets.add(client);
    client.on("close", () => sockets.delete(client));
    client.on("error", () => client.destroy());
    const tries = order();
    const attempt = (): void => {
      const backend = tries.shift();
      if (backend === undefined) return void client.end("HTTP/1.1 502 Bad Gateway\r\nconnection: close\r\n\r\n");
      const up = net.connect(backends[backend]!, "127.0.0.1");
      sockets.add(up);
      up.on("close", () => sockets.delete(up));
      let connected = false;
      up.once("connect", () => {
        connected = true;
        record({
          seq: 0,
          method: req.method ?? "GET",
          path: req.url ?? "",
          backend,
          sessionId: undefined,
          rpcMethod: undefined,
          upgrade: true,
        });
        const lines = [`${req.method} ${req.url} HTTP/${req.httpVersion}`];
        for (let i = 0; i + 1 < req.rawHeaders.length; i += 2)
          lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
        up.write(`${lines.join("\r\n")}\r\n\r\n`);
        if (head.length) up.write(head);
        up.pipe(client);
        client.pipe(up);
      });
      up.on("error", (err: NodeJS.ErrnoException) => {
        if (!connected && err.code === "ECONNREFUSED") return attempt();
        client.destroy();
      });
      client.on("close", () => up.destroy());
    };
    attempt();
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", resolve);
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${bound}`,
    port: bound,
    routes,
    setBackends(ports) {
      backends = [...ports];
    },
    setDown(index, isDown) {
      if (isDown) down.add(index);
      else down.delete(index);
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function header(m: IncomingMessage, name: string): string | undefined {
  const v = m.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** The JSON-RPC method of a body (the first of a batch); undefined when it is not JSON-RPC. */
function rpcMethodOf(body: Buffer): string | undefined {
  if (!body.length || body[0] !== 0x7b) return undefined;
  try {
    const m = (JSON.parse(body.toString("utf8")) as { method?: unknown }).method;
    return typeof m === "string" ? m : undefined;
  } catch {
    return undefined;
  }
}
