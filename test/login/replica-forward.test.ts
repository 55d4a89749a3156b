// The login forwarder (src/login/replica/forward.ts) between real HTTP servers on loopback: what a
// forwarded request and its answer carry (hop-by-hop headers dropped, Host kept, the forwarded
// mark added), its bounds (response size, idle timeout, forwards in flight), and WebSocket
// upgrades relayed both ways or refused with the holder's status.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import WebSocket, { WebSocketServer } from "ws";
import {
  FORWARDED_HEADER,
  type ForwardLimits,
  type ForwardResult,
  ReplicaForwarder,
} from "../../src/login/replica/forward.js";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

async function listen(server: http.Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  closers.push(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A "replica" that forwards every request and upgrade to `target`; `results` records how each forward went. */
async function forwarding(target: string, limits: ForwardLimits): Promise<{ url: string; results: ForwardResult[] }> {
  const f = new ReplicaForwarder(limits);
  const results: ForwardResult[] = [];
  const server = http.createServer((req, res) => {
    void f.forwardRequest(target, req, res).then((r) => {
      results.push(r);
      if (r !== "relayed") {
        res.writeHead(599);
        res.end(r);
      }
    });
  });
  server.on("upgrade", (req, socket, head) => {
    void f.forwardUpgrade(target, req, socket, head).then((r) => {
      results.push(r);
      if (r !== "relayed") socket.end("HTTP/1.1 599 Not Forwarded\r\nContent-Length: 0\r\n\r\n");
    });
  });
  return { url: await listen(server), results };
}

const LIMITS: ForwardLimits = { idleMs: 30_000, maxResponseBytes: 1 << 20, maxInFlight: 16 };

describe("forwarding a page request", () => {
  it("drops hop-by-hop headers both ways, keeps Host and the cookie, marks the request forwarded", async () => {
    let seen: http.IncomingHttpHeaders = {};
    const holder = await listen(
      http.createServer((req, res) => {
        seen = req.headers;
        res.writeHead(200, {
          "content-type": "text/plain",
          connection: "close, x-hop-answer",
          "x-hop-answer": "1",
          "keep-alive": "timeout=5",
          "x-end-to-end": "kept",
        });
        res.end("page");
      }),
    );
    const fwd = await forwarding(holder, LIMITS);
    const answer = await new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>(
      (resolve, reject) => {
        const req = http.request(
          `${fwd.url}/login/l/abc`,
          {
            headers: {
              host: "slaude.example:443",
              cookie: "slaude_login=s.v",
              connection: "keep-alive, x-hop-request",
              "x-hop-request": "1",
              "keep-alive": "timeout=5",
              te: "trailers",
              "proxy-authorization": "Basic eA==",
              [FORWARDED_HEADER]: "spoofed",
            },
          },
          (res) => {
            let body = "";
            res
              .setEncoding("utf8")
              .on("data", (d: string) => (body += d))
              .on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
          },
        );
        req.on("error", reject);
        req.end();
      },
    );
    expect(answer).toMatchObject({ status: 200, body: "page" });
    expect(answer.headers["x-end-to-end"]).toBe("kept");
    expect(answer.headers["x-hop-answer"]).toBeUndefined();
    expect(seen.host).toBe("slaude.example:443");
    expect(seen.cookie).toBe("slaude_login=s.v");
    expect(seen[FORWARDED_HEADER]).toBe("1");
    expect(seen["x-forwarded-for"]).toBe("127.0.0.1");
    for (const h of ["x-hop-request", "keep-alive", "te", "proxy-authorization"]) expect(seen[h], h).toBeUndefined();
    expect(fwd.results).toEqual(["relayed"]);
  });

  it("cuts off a response past the size cap", async () => {
    const holder = await listen(
      http.createServer((_req, res) => {
        res.writeHead(200, { "content-type": "application/octet-stream" });
        res.end(Buffer.alloc(256 * 1024, 1));
      }),
    );
    const fwd = await forwarding(holder, { ...LIMITS, maxResponseBytes: 64 * 1024 });
    const got = await fetch(`${fwd.url}/login/l/abc`)
      .then(
        async (r) => (await r.arrayBuffer()).byteLength,
        () => -1,
      )
      .catch(() => -1);
    // The client never receives more than the cap: the stream is cut (an error) or ends short.
    expect(got).toBeLessThanOrEqual(64 * 1024);
  });

  it("a holder that accepts and never answers fails the forward as unreachable after the idle timeout", async () => {
    const hanging = await listen(http.createServer(() => {}));
    const fwd = await forwarding(hanging, { ...LIMITS, idleMs: 300 });
    const r = await fetch(`${fwd.url}/login/l/one`);
    expect([r.status, await r.text()]).toEqual([599, "unreachable"]);
  });

  it("forwards in flight are capped: one more is refused as busy without connecting", async () => {
    let arrived = 0;
    const server = http.createServer(() => void arrived++);
    const hanging = await listen(server);
    const fwd = await forwarding(hanging, { ...LIMITS, maxInFlight: 1 });
    const first = fetch(`${fwd.url}/login/l/one`);
    await expect.poll(() => arrived, { timeout: 20_000 }).toBe(1);
    const second = await fetch(`${fwd.url}/login/l/two`);
    expect([second.status, await second.text()]).toEqual([599, "busy"]);
    expect(arrived).toBe(1);
    // The holder drops the first one before answering: that forward is unreachable.
    server.closeAllConnections();
    const r1 = await first;
    expect([r1.status, await r1.text()]).toEqual([599, "unreachable"]);
    expect(fwd.results).toEqual(["busy", "unreachable"]);
  });

  it("a holder that refuses the connection is unreachable, and nothing was written to the client", async () => {
    const closed = await listen(http.createServer());
    const port = new URL(closed).port;
    await closers.pop()!();
    const fwd = await forwarding(`http://127.0.0.1:${port}`, LIMITS);
    const r = await fetch(`${fwd.url}/login/l/x`);
    expect([r.status, await r.text()]).toEqual([599, "unreachable"]);
  });
});

describe("forwarding a WebSocket", () => {
  it("relays the holder's handshake and messages both ways, and a refused upgrade with the holder's status", async () => {
    const server = http.createServer();
    const wss = new WebSocketServer({ noServer: true });
    server.on("upgrade", (req, socket, head) => {
      if (!String(req.headers.cookie).includes("ok")) {
        socket.end("HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
        return;
      }
      wss.handleUpgrade(req, socket, head, (ws) => {
        ws.send(`hello ${String(req.headers[FORWARDED_HEADER])}`);
        ws.on("message", (d) => ws.send(`echo ${String(d)}`));
      });
    });
    const holder = await listen(server);
    closers.push(async () => wss.close());
    const fwd = await forwarding(holder, LIMITS);
    const ws = new WebSocket(`${fwd.url.replace("http", "ws")}/login/ws?s=x`, { headers: { cookie: "ok" } });
    const got: string[] = [];
    ws.on("message", (d) => {
      got.push(String(d));
      if (got.length === 1) ws.send("big".repeat(20_000));
    });
    await expect.poll(() => got.length, { timeout: 20_000 }).toBe(2);
    expect(got[0]).toBe("hello 1");
    expect(got[1]).toBe(`echo ${"big".repeat(20_000)}`);
    ws.close();
    const refused = await new Promise<number>((resolve) => {
      const w = new WebSocket(`${fwd.url.replace("http", "ws")}/login/ws?s=x`, { headers: { cookie: "no" } });
      w.on("unexpected-response", (_q, res) => resolve(res.statusCode ?? 0));
      w.on("error", () => undefined);
    });
    expect(refused).toBe(401);
  });
});
