// Login cannot exhaust the machine (issue 9, item 7): the browser cap holds from a link's first
// load, one flow gets one browser and one live socket, a socket's input queue is bounded, and an
// unwatched flow ends and kills its browser. Real app, real Chromium (the production factory, so its
// processes are found through /proc by their HOME under the data dir), real WebSockets.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import WebSocket from "ws";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { ManualClock } from "../../src/clock/clock.js";
import { loadConfig } from "../../src/config/env.js";
import { parseRegistry } from "../../src/config/registry.js";
import { memoryLogger } from "../../src/log/logger.js";
import { type FakeIdp, startFakeIdp } from "../fixtures/idp/fake-idp.js";
import { cmdlineOf, processesReferencing } from "../support/proc.js";
import { until } from "../support/until.js";

const ALICE = "UALICE01";
// Real Chromium on a loaded shared machine: generous bounds, no timed assertions.
vi.setConfig({ testTimeout: 240_000 });
const THREAD = { teamId: "T1", channelId: "C1", threadTs: "1700000000.000100" };

let idp: FakeIdp;
let app: RunningApp | undefined;
let dir: string;
let log: ReturnType<typeof memoryLogger>;

beforeAll(async () => {
  idp = await startFakeIdp({ clients: [] });
});
afterAll(async () => {
  await idp?.close();
});
afterEach(async () => {
  await app?.close();
  app = undefined;
  // Closing the app must have closed every login browser it started.
  expect(chromiumProcesses()).toEqual([]);
  rmSync(dir, { recursive: true, force: true });
});

async function boot(env: Record<string, string>, clock?: ManualClock): Promise<RunningApp> {
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-limits-"));
  log = memoryLogger("debug");
  const host = new URL(idp.url).host;
  const transport = { type: "stdio", command: "true", credentialEnv: { COOKIE: "{{cookie_header}}" } };
  // These tests count the login browsers a flow starts; the spare browser has its own tests (test/login/spare*).
  app = await startApp({
    config: loadConfig({
      NODE_ENV: "test",
      SLAUDE_DATA_DIR: dir,
      PORT: "0",
      SLAUDE_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
      SLAUDE_CHROMIUM_PATH: "/usr/bin/chromium",
      PATH: process.env.PATH ?? "",
      SLAUDE_LOGIN_SPARE_BROWSERS: "0",
      ...env,
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
    log,
    ...(clock ? { clock } : {}),
  });
  return app;
}

/** Every live process of this app's login browsers: their HOME is under the data dir. */
function chromiumProcesses(): number[] {
  return processesReferencing([path.join(dir, "login-browsers")]);
}

/** The Chromium browser processes themselves (one per launch), without their renderers and helpers. */
function browserRoots(): number[] {
  return chromiumProcesses().filter((pid) => {
    const argv = cmdlineOf(pid).split("\0");
    return argv.includes("--remote-debugging-pipe") && !argv.some((a) => a.startsWith("--type="));
  });
}

/** Mints a link and loads its page once, as the user's browser would. */
async function load(
  a: RunningApp,
): Promise<{ status: number; cookie: string | undefined; sessionId: string; local: string }> {
  const m = await a.logins.mint({ ...THREAD, userId: ALICE, service: "cookiesvc" });
  const local = `${a.url}${new URL(m.url).pathname}`;
  const res = await fetch(local, { redirect: "manual" });
  await res.text();
  return { status: res.status, cookie: res.headers.get("set-cookie")?.split(";")[0], sessionId: m.sessionId, local };
}

interface Socket {
  readonly ws: WebSocket;
  readonly messages: { type: string; state?: string; message?: string }[];
  readonly opened: Promise<boolean>;
  readonly closed: Promise<number>;
  send(m: unknown): void;
}

function socket(a: RunningApp, sessionId: string, cookie: string): Socket {
  const ws = new WebSocket(`${a.url.replace("http", "ws")}/login/ws?s=${encodeURIComponent(sessionId)}`, {
    headers: { origin: a.url, cookie },
  });
  const messages: Socket["messages"] = [];
  ws.on("message", (d) => {
    const m = JSON.parse(String(d)) as Socket["messages"][number];
    if (m.type !== "frame") messages.push(m);
  });
  const opened = new Promise<boolean>((resolve) => {
    ws.once("open", () => resolve(true));
    ws.once("unexpected-response", () => resolve(false));
  });
  ws.on("error", () => undefined);
  const closed = new Promise<number>((resolve) => ws.once("close", (code) => resolve(code)));
  return { ws, messages, opened, closed, send: (m) => ws.send(JSON.stringify(m)) };
}

const state = (s: Socket, st: string) => s.messages.some((m) => m.type === "status" && m.state === st);

describe("the browser cap", () => {
  it("holds from a link's first load: 5 links with a cap of 2 give 2 pages and 2 browsers; the others are told Busy and keep their link", async () => {
    const a = await boot({ SLAUDE_LOGIN_MAX_CONCURRENT: "2" });
    const loads = [];
    for (let i = 0; i < 5; i++) loads.push(await load(a));
    expect(loads.map((l) => l.status)).toEqual([200, 200, 503, 503, 503]);
    expect(a.logins.slotsInUse).toBe(2);
    // Every page that was let in attaches: exactly two browsers start.
    const sockets = loads.filter((l) => l.status === 200).map((l) => socket(a, l.sessionId, l.cookie!));
    expect(await Promise.all(sockets.map((s) => s.opened))).toEqual([true, true]);
    for (const s of sockets) s.send({ type: "viewport", width: 800, height: 600 });
    await until(() => sockets.every((s) => state(s, "waiting")), 60_000, "both browsers up");
    expect(browserRoots()).toHaveLength(2);
    // The refused links were not consumed: once a slot is free, loading one again works.
    sockets[0]!.send({ type: "cancel" });
    await until(() => a.logins.slotsInUse === 1, 20_000, "slot given back after cancel");
    expect(browserRoots()).toHaveLength(1);
    const again = await fetch(loads[2]!.local, { redirect: "manual" });
    expect(again.status).toBe(200);
    expect(a.logins.slotsInUse).toBe(2);
    for (const s of sockets) s.ws.close();
  });
});

describe("one flow, one browser, one socket", () => {
  it("six sockets on one viewer cookie: one drives the flow, five are refused, one browser starts; after Cancel no Chromium process is left", async () => {
    const a = await boot({});
    const l = await load(a);
    const sockets = Array.from({ length: 6 }, () => socket(a, l.sessionId, l.cookie!));
    await Promise.all(sockets.map((s) => s.opened));
    for (const s of sockets)
      if (s.ws.readyState === WebSocket.OPEN) s.send({ type: "viewport", width: 800, height: 600 });
    await until(() => sockets.some((s) => state(s, "waiting")), 60_000, "the browser up");
    await until(() => sockets.filter((s) => state(s, "refused")).length === 5, 10_000, "five refusals");
    expect(await Promise.race(sockets.filter((s) => state(s, "refused")).map((s) => s.closed))).toBe(4409);
    expect(browserRoots()).toHaveLength(1);
    const live = sockets.find((s) => state(s, "waiting"))!;
    live.send({ type: "cancel" });
    await until(() => state(live, "cancelled"), 20_000, "cancelled");
    await until(() => chromiumProcesses().length === 0, 20_000, "every Chromium process gone");
    await until(() => a.logins.slotsInUse === 0, 10_000, "slot given back");
    for (const s of sockets) s.ws.close();
  });

  it("an input flood closes the socket (1008) instead of queueing without bound; the flow goes on for the next socket", async () => {
    const a = await boot({});
    const l = await load(a);
    const s = socket(a, l.sessionId, l.cookie!);
    await s.opened;
    s.send({ type: "viewport", width: 800, height: 600 });
    await until(() => state(s, "waiting"), 60_000, "the browser up");
    const burst = JSON.stringify({ type: "mouse", kind: "move", x: 10, y: 10 });
    // Far more than a page ever sends (~25 a second): the queue (128) overflows at once.
    for (let i = 0; i < 5_000; i++) s.ws.send(burst);
    expect(await s.closed).toBe(1008);
    expect(log.lines.join("\n")).toContain("live-view input flood");
    // The flood cost the socket, not the flow: a reload reattaches to the same browser.
    const next = socket(a, l.sessionId, l.cookie!);
    expect(await next.opened).toBe(true);
    next.send({ type: "viewport", width: 800, height: 600 });
    await until(() => state(next, "waiting"), 20_000, "reattached");
    expect(browserRoots()).toHaveLength(1);
    next.ws.close();
  });
});

describe("an unwatched flow", () => {
  it("ends after the grace period when its socket closes, or when its page never connects: browser killed, slot given back", async () => {
    // The grace period runs on the app's clock: the test moves time instead of waiting for it.
    const clock = new ManualClock(Date.now());
    const a = await boot({ SLAUDE_LOGIN_DETACH_GRACE_SECONDS: "2" }, clock);
    const l = await load(a);
    const s = socket(a, l.sessionId, l.cookie!);
    await s.opened;
    s.send({ type: "viewport", width: 800, height: 600 });
    await until(() => state(s, "waiting"), 60_000, "the browser up");
    expect(browserRoots()).toHaveLength(1);
    s.ws.close();
    // The grace period starts when the server sees the close: time moves a second at a time until
    // the flow has ended (the audit decision below proves it ended as abandoned, not timed out).
    await until(
      async () => {
        await clock.advanceAsync(1_000);
        return (await a.store.loginSessions.get(l.sessionId))?.status === "expired";
      },
      20_000,
      "flow ended after the grace period",
    );
    await until(() => chromiumProcesses().length === 0, 20_000, "browser killed");
    await until(() => a.logins.slotsInUse === 0, 10_000, "slot given back");
    expect((await a.store.audit.query({ event: "login_refused" })).map((r) => r.decision)).toContain("abandoned");
    // A page loaded but never connected holds its slot no longer than the grace period either.
    const idle = await load(a);
    expect(a.logins.slotsInUse).toBe(1);
    await clock.advanceAsync(2_000);
    await until(() => a.logins.slotsInUse === 0, 20_000, "slot of a page that never connected");
    expect((await a.store.loginSessions.get(idle.sessionId))?.status).toBe("expired");
    // The same viewer coming back is told the login ended, not that someone else used the link.
    const back = await fetch(l.local, { headers: { cookie: l.cookie! }, redirect: "manual" });
    expect(back.status).toBe(410);
    expect(await back.text()).toContain("Login ended");
  });
});
