// Login across replicas (issue 14, item 2 "Login"): two app instances on one real PostgreSQL, a tiny
// round-robin proxy in front of them, the user's own Chromium on the live-view page and the login
// browser (real Chromium) on the replica that opened the link. The page's WebSocket lands on the
// other replica and is forwarded to the holder; the login completes and the connection is stored.
// Forwarding goes only to the holder recorded in the database, and never loops.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import net, { type AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import WebSocket from "ws";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { loadConfig } from "../../src/config/env.js";
import { parseRegistry } from "../../src/config/registry.js";
import { memoryLogger } from "../../src/log/logger.js";
import { FORWARDED_HEADER } from "../../src/login/replica/forward.js";
import { PostgresStore } from "../../src/store/postgres/pg-store.js";
import { PostgresTopology } from "../../src/topology/postgres/postgres-topology.js";
import { bindingOf } from "../../src/vault/binding.js";
import { KeyRing } from "../../src/vault/keyring.js";
import { Vault } from "../../src/vault/vault.js";
import { centerOf, type FakeIdp, LOGIN_LAYOUT, startFakeIdp } from "../fixtures/idp/fake-idp.js";
import { type PgCluster, startPostgres } from "../support/postgres.js";
import { processesReferencing } from "../support/proc.js";

// Real Chromium twice and a real PostgreSQL on a loaded shared machine: generous bounds, no timed assertions.
vi.setConfig({ testTimeout: 240_000, hookTimeout: 120_000 });
const ALICE = "UALICE01";
const THREAD = { teamId: "T1", channelId: "C1", threadTs: "1700000000.000100" };
const CHROMIUM = "/usr/bin/chromium";
const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

let cluster: PgCluster;
let idp: FakeIdp;
let viewer: Browser;
const apps: RunningApp[] = [];
const dirs: string[] = [];
const closers: (() => Promise<void>)[] = [];
let keyB64: string;
let databaseUrl: string;

beforeAll(async () => {
  cluster = await startPostgres();
  idp = await startFakeIdp({ clients: [] });
  viewer = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
});
afterAll(async () => {
  await viewer?.close();
  await idp?.close();
  await cluster?.stop();
});
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
  for (const a of apps.splice(0)) await a.close();
  // Closing the apps closed every login browser they started.
  await vi.waitFor(() => expect(processesReferencing(dirs.map((d) => path.join(d, "login-browsers")))).toEqual([]), {
    timeout: 20_000,
    interval: 100,
  });
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** One replica on `databaseUrl`: its own data dir and port, the shared key and registry. */
async function replica(databaseUrl: string): Promise<RunningApp> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-replica-"));
  dirs.push(dir);
  const host = new URL(idp.url).host;
  const transport = { type: "stdio", command: "true", credentialEnv: { COOKIE: "{{cookie_header}}" } };
  const app = await startApp({
    config: loadConfig({
      NODE_ENV: "test",
      SLAUDE_DATA_DIR: dir,
      PORT: "0",
      SLAUDE_DATABASE_URL: databaseUrl,
      SLAUDE_ENCRYPTION_KEY: keyB64,
      SLAUDE_CHROMIUM_PATH: CHROMIUM,
      SLAUDE_LOGIN_SPARE_BROWSERS: "0",
      PATH: process.env.PATH ?? "",
    }),
    registry: parseRegistry(
      {
        services: {
          cookiesvc: {
            transport,
            capture: { strategy: "cookie", startUrl: `${idp.url}/login`, requiredCookies: ["idp_session"] },
            loginDomains: [host],
          },
        },
      },
      "test",
    ),
    log: memoryLogger("debug"),
  });
  apps.push(app);
  return app;
}

async function twoReplicas(): Promise<[RunningApp, RunningApp]> {
  keyB64 = randomBytes(32).toString("base64");
  databaseUrl = await cluster.createDatabase();
  return [await replica(databaseUrl), await replica(databaseUrl)];
}

const portOf = (a: RunningApp): number => a.port;

interface Proxy {
  readonly url: string;
  /** Which backend (index) each HTTP request and each upgrade went to, in order. */
  readonly http: number[];
  readonly upgrades: number[];
}

/**
 * A tiny round-robin proxy on loopback: each HTTP request goes to the next backend, and so does each
 * WebSocket upgrade (upgrades take their turn from the second backend, so with two replicas the
 * page and its socket land on different ones). Host is passed on unchanged, as load balancers do.
 */
async function roundRobin(backends: readonly number[]): Promise<Proxy> {
  const p = { http: [] as number[], upgrades: [] as number[] };
  let nextHttp = 0;
  let nextUpgrade = 1;
  const server = http.createServer((req, res) => {
    const i = nextHttp++ % backends.length;
    p.http.push(i);
    const up = http.request(
      { host: "127.0.0.1", port: backends[i], method: req.method, path: req.url, headers: req.headers },
      (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      },
    );
    up.on("error", () => res.destroy());
    req.pipe(up);
  });
  // Upgraded sockets are not the server's connections any more: closed by hand, or close() waits on them.
  const upgraded = new Set<net.Socket>();
  server.on("upgrade", (req, socket, head) => {
    upgraded.add(socket as net.Socket);
    socket.once("close", () => upgraded.delete(socket as net.Socket));
    const i = nextUpgrade++ % backends.length;
    p.upgrades.push(i);
    const up = net.connect(backends[i]!, "127.0.0.1", () => {
      const lines = [`${req.method} ${req.url} HTTP/1.1`];
      for (let k = 0; k + 1 < req.rawHeaders.length; k += 2)
        lines.push(`${req.rawHeaders[k]}: ${req.rawHeaders[k + 1]}`);
      up.write(`${lines.join("\r\n")}\r\n\r\n`);
      if (head.length) up.write(head);
      up.pipe(socket);
      socket.pipe(up);
    });
    up.on("error", () => socket.destroy());
    socket.on("error", () => up.destroy());
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  closers.push(async () => {
    server.closeAllConnections();
    for (const sock of upgraded) sock.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, ...p };
}

/** Clicks the point (x, y) of the confined page by clicking the matching spot of the streamed image. */
async function clickRemote(page: Page, at: { x: number; y: number }): Promise<void> {
  const box = (await page.locator("#screen").boundingBox())!;
  const natural = await page.locator("#screen").evaluate((img) => {
    const i = img as unknown as { naturalWidth: number; naturalHeight: number };
    return { w: i.naturalWidth, h: i.naturalHeight };
  });
  await page.mouse.click(box.x + (at.x * box.width) / natural.w, box.y + (at.y * box.height) / natural.h);
}

async function signIn(page: Page): Promise<void> {
  await clickRemote(page, centerOf(LOGIN_LAYOUT.username));
  await page.keyboard.type("alice", { delay: 15 });
  await clickRemote(page, centerOf(LOGIN_LAYOUT.password));
  await page.keyboard.type("alice-password", { delay: 15 });
  await page.keyboard.press("Enter");
}

/** Loads a link once as the user's browser would (consuming it); returns the viewer cookie. */
async function openLink(a: RunningApp, linkUrl: string): Promise<{ status: number; cookie: string }> {
  const res = await fetch(`${a.url}${new URL(linkUrl).pathname}`, { redirect: "manual" });
  await res.text();
  return { status: res.status, cookie: res.headers.get("set-cookie")?.split(";")[0] ?? "" };
}

function holders(a: RunningApp): PostgresTopology["loginHolders"] {
  expect(a.store).toBeInstanceOf(PostgresStore);
  return new PostgresTopology((a.store as PostgresStore).db).loginHolders;
}

/** Opens a live-view socket on `a` as a page served by `origin` would; resolves with the handshake status. */
function socketStatus(
  a: RunningApp,
  sessionId: string,
  cookie: string,
  headers: Record<string, string> = {},
): Promise<number> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${a.url.replace("http", "ws")}/login/ws?s=${encodeURIComponent(sessionId)}`, {
      headers: { origin: a.url, cookie, ...headers },
    });
    ws.once("open", () => {
      ws.close();
      resolve(101);
    });
    ws.once("unexpected-response", (_req, res) => {
      resolve(res.statusCode ?? 0);
      ws.terminate();
    });
    ws.on("error", () => undefined);
  });
}

describe("a login through any replica", () => {
  it("the link opens on A; the page's WebSocket lands on B and is forwarded to A's browser; the login completes and the connection is stored", async () => {
    const [a, b] = await twoReplicas();
    const proxy = await roundRobin([portOf(a), portOf(b)]);
    const link = await b.logins.mint({ ...THREAD, userId: ALICE, service: "cookiesvc" });
    const ctx = await viewer.newContext({ viewport: { width: 1100, height: 900 } });
    const page = await ctx.newPage();
    const res = await page.goto(`${proxy.url}${new URL(link.url).pathname}`);
    expect(res?.status()).toBe(200);
    // The first request opened the link on A: A holds the flow, and says so in the database.
    expect(proxy.http[0]).toBe(0);
    expect(await holders(b).holderOf(link.sessionId)).toBe(new URL(a.url).origin);
    await page.waitForSelector("#screen.live", { timeout: 60_000 });
    // The socket went to B; the frames come from A's login browser, through B.
    expect(proxy.upgrades).toEqual([1]);
    // Frames stream while Chromium's start is still being awaited: the flow holds its browser just after.
    await vi.waitFor(() => expect([a.logins.activeBrowsers, b.logins.activeFlows]).toEqual([1, 0]), {
      timeout: 30_000,
      interval: 50,
    });
    await signIn(page);
    const conn = await vi.waitFor(
      async () => {
        const [c] = await b.store.connections.list({ service: "cookiesvc" });
        if (!c) throw new Error("not stored yet");
        return c;
      },
      { timeout: 60_000, interval: 100 },
    );
    expect(conn).toMatchObject({ ownerUserId: ALICE, scope: "thread", channelId: THREAD.channelId, status: "active" });
    const cred = new Vault(KeyRing.fromBase64(keyB64)).openCredential(conn.sealed, bindingOf(conn));
    expect(cred.kind === "cookies" && cred.cookies.map((c) => c.name)).toContain("idp_session");
    await vi.waitFor(async () => expect(await page.locator("#status").textContent()).toContain("Connected"), {
      timeout: 20_000,
    });
    expect((await a.store.loginSessions.get(link.sessionId))?.status).toBe("completed");
    // One flow, one browser, on A only: B never started one. The browser is torn down after capture.
    expect(b.logins.activeFlows).toBe(0);
    await vi.waitFor(() => expect(a.logins.activeBrowsers).toBe(0), { timeout: 20_000, interval: 100 });
    expect(processesReferencing([path.join(dirs[1]!, "login-browsers")])).toEqual([]);
    await ctx.close();
  });

  it("a page or socket for an unknown flow is refused where it lands, and nothing is forwarded", async () => {
    const [, b] = await twoReplicas();
    const unknown = randomBytes(32).toString("base64url");
    const page = await fetch(`${b.url}/login/l/${unknown}`);
    expect(page.status).toBe(404);
    expect(await page.text()).toContain("Link not valid");
    expect(
      await socketStatus(b, "login_nope", `slaude_login=login_nope.${randomBytes(32).toString("base64url")}`),
    ).toBe(401);
  });
});

/** A TCP relay that sends every connection to `port` and counts them: a "holder" that points back. */
async function relayTo(port: number): Promise<{ url: string; connections: () => number }> {
  let n = 0;
  const server = net.createServer((s) => {
    n++;
    const up = net.connect(port, "127.0.0.1");
    s.pipe(up);
    up.pipe(s);
    s.on("error", () => up.destroy());
    up.on("error", () => s.destroy());
    s.on("close", () => up.destroy());
    up.on("close", () => s.destroy());
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  closers.push(async () => {
    await new Promise<void>((r) => server.close(() => r()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, connections: () => n };
}

describe("forwarding is bounded to recorded holders", () => {
  it("a holder address that leads back to the forwarding replica is reached once: the forwarded request is never forwarded again", async () => {
    const [a, b] = await twoReplicas();
    const link = await a.logins.mint({ ...THREAD, userId: ALICE, service: "cookiesvc" });
    const opened = await openLink(a, link.url);
    expect(opened.status).toBe(200);
    // The database names a holder that is really B again (a misconfigured SLAUDE_REPLICA_URL).
    const loop = await relayTo(portOf(b));
    expect(await holders(b).takeOver(link.sessionId, new URL(a.url).origin, loop.url)).toBe(true);
    const page = await fetch(`${b.url}${new URL(link.url).pathname}`, { headers: { cookie: opened.cookie } });
    expect(page.status).toBe(502);
    expect(await page.text()).toContain("Login unavailable");
    expect(loop.connections()).toBe(1);
    expect(await socketStatus(b, link.sessionId, opened.cookie)).toBe(502);
    expect(loop.connections()).toBe(2);
    // A request that claims to be forwarded is never forwarded, whoever sent it.
    expect(await socketStatus(b, link.sessionId, opened.cookie, { [FORWARDED_HEADER]: "1" })).toBe(502);
    expect(loop.connections()).toBe(2);
    expect(b.logins.activeFlows).toBe(0);
  });

  it("a holder value that is not a bare replica URL is never connected to", async () => {
    const [a, b] = await twoReplicas();
    const link = await a.logins.mint({ ...THREAD, userId: ALICE, service: "cookiesvc" });
    const opened = await openLink(a, link.url);
    const target = await relayTo(portOf(a));
    for (const bad of [
      `${target.url}/elsewhere`,
      target.url.replace("http://", "http://user:pw@"),
      `${target.url}?x=1`,
      target.url.replace("http", "gopher"),
    ]) {
      await cluster.superQuery(
        `UPDATE login_sessions SET holder_url = '${bad}' WHERE id = '${link.sessionId}'`,
        new URL(databaseUrl).pathname.slice(1),
      );
      const page = await fetch(`${b.url}${new URL(link.url).pathname}`, { headers: { cookie: opened.cookie } });
      expect(page.status, bad).toBe(502);
      expect(await socketStatus(b, link.sessionId, opened.cookie), bad).toBe(502);
    }
    expect(target.connections()).toBe(0);
  });
});
