// The round-robin balancer of the replica harness (test/support/rr-proxy.ts), against plain HTTP and
// WebSocket backends: it must rotate, skip what is down or refuses connections, and carry upgrades,
// or the replica tests would prove nothing about "any request may reach any replica".
import http, { type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import WebSocket, { WebSocketServer } from "ws";
import { type RoundRobinProxy, startRoundRobinProxy } from "../support/rr-proxy.js";

interface Backend {
  readonly server: Server;
  readonly port: number;
}

let backends: Backend[] = [];
let proxy: RoundRobinProxy | undefined;

/** A backend that answers `<index> <method> <body>` and echoes WebSocket messages prefixed by its index. */
async function backend(index: number): Promise<Backend> {
  const server = http.createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8").on("data", (d: string) => (body += d));
    req.on("end", () =>
      res
        .writeHead(200, { "content-type": "text/plain", "mcp-session-id": `s${index}` })
        .end(`${index} ${req.method} ${body}`),
    );
  });
  const wss = new WebSocketServer({ server });
  wss.on("connection", (ws) => ws.on("message", (m) => ws.send(`${index}:${String(m)}`)));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { server, port: (server.address() as AddressInfo).port };
}

async function start(n: number): Promise<RoundRobinProxy> {
  backends = await Promise.all(Array.from({ length: n }, (_, i) => backend(i)));
  proxy = await startRoundRobinProxy();
  proxy.setBackends(backends.map((b) => b.port));
  return proxy;
}

const get = async (url: string, body?: string): Promise<string> =>
  (await fetch(url, body === undefined ? {} : { method: "POST", body })).text();

afterEach(async () => {
  await proxy?.close();
  for (const b of backends) {
    b.server.closeAllConnections();
    await new Promise((r) => b.server.close(r));
  }
  backends = [];
});

describe("the round-robin proxy of the replica harness", () => {
  it("sends each request to the next backend in turn, bodies and methods intact, and records where each went", async () => {
    const p = await start(3);
    const answers: string[] = [];
    for (let i = 0; i < 6; i++) answers.push(await get(`${p.url}/x`, `{"method":"tools/call","n":${i}}`));
    expect(answers.map((a) => a.split(" ")[0])).toEqual(["0", "1", "2", "0", "1", "2"]);
    expect(answers[4]).toBe('1 POST {"method":"tools/call","n":4}');
    expect(p.routes.map((r) => r.backend)).toEqual([0, 1, 2, 0, 1, 2]);
    expect(p.routes[0]).toMatchObject({
      method: "POST",
      path: "/x",
      rpcMethod: "tools/call",
      sessionId: "s0",
      upgrade: false,
    });
  });

  it("skips a backend marked down, and one that refuses connections, without failing the request", async () => {
    const p = await start(3);
    p.setDown(1, true);
    const seen = [];
    for (let i = 0; i < 4; i++) seen.push((await get(`${p.url}/`)).split(" ")[0]);
    expect(seen).not.toContain("1");
    p.setDown(1, false);
    // Backend 2 dies without the proxy being told: its turn goes to the next live one.
    backends[2]!.server.closeAllConnections();
    await new Promise((r) => backends[2]!.server.close(r));
    const after = [];
    for (let i = 0; i < 6; i++) after.push((await get(`${p.url}/`)).split(" ")[0]);
    expect(after).not.toContain("2");
    expect(new Set(after)).toEqual(new Set(["0", "1"]));
  });

  it("carries WebSocket upgrades to the next backend, both ways", async () => {
    const p = await start(2);
    const echo = async (): Promise<string> => {
      const ws = new WebSocket(`${p.url.replace("http", "ws")}/ws`);
      await new Promise((resolve, reject) => {
        ws.once("open", resolve);
        ws.once("error", reject);
      });
      const reply = new Promise<string>((resolve) => ws.once("message", (m) => resolve(String(m))));
      ws.send("ping");
      const r = await reply;
      ws.close();
      return r;
    };
    const replies = [await echo(), await echo(), await echo()];
    expect(replies).toEqual(["0:ping", "1:ping", "0:ping"]);
    expect(p.routes.filter((r) => r.upgrade).map((r) => r.backend)).toEqual([0, 1, 0]);
  });
});
