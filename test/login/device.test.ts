// Device-code login (issue 15, part 2): a `device` service's private login page shows the
// verification URL and user code (no browser starts), the broker polls a real fake authorization
// server on loopback on the Clock (RFC 8628: interval, slow_down +5 s, authorization_pending,
// expired_token, access_denied), and stores the tokens as an oauth credential bound to the minting
// user. Real app, real SQLite, real WebSockets; time moves only when the test advances the ManualClock.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";
import { afterEach, describe, expect, it, vi } from "vitest";
import WebSocket from "ws";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { ManualClock } from "../../src/clock/clock.js";
import { loadConfig } from "../../src/config/env.js";
import { parseRegistry } from "../../src/config/registry.js";
import { memoryLogger } from "../../src/log/logger.js";
import { bindingOf } from "../../src/vault/binding.js";
import { KeyRing } from "../../src/vault/keyring.js";
import { Vault } from "../../src/vault/vault.js";
import { type DeviceAuthorization, type FakeDeviceAs, startFakeDeviceAs } from "../fixtures/device-as.js";

vi.setConfig({ testTimeout: 60_000 });
const ALICE = "UALICE01";
const THREAD = { teamId: "T1", channelId: "C1", threadTs: "1700000000.000100" };
const START = Date.UTC(2026, 0, 5, 9, 0, 0);

let as: FakeDeviceAs | undefined;
let app: RunningApp | undefined;
let dir: string;
let log: ReturnType<typeof memoryLogger>;
let keyB64: string;

afterEach(async () => {
  await app?.close();
  await as?.close();
  app = undefined;
  as = undefined;
  rmSync(dir, { recursive: true, force: true });
});

async function boot(clock: ManualClock, env: Record<string, string> = {}, userCode?: string): Promise<RunningApp> {
  as = await startFakeDeviceAs({
    clientId: "slaude-device",
    now: () => clock.now(),
    ...(userCode ? { userCode } : {}),
  });
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-device-"));
  log = memoryLogger("debug");
  keyB64 = randomBytes(32).toString("base64");
  const device = {
    deviceAuthorizationEndpoint: `${as.url}/device_authorization`,
    tokenEndpoint: `${as.url}/token`,
    clientId: "slaude-device",
    scopes: ["read"],
  };
  app = await startApp({
    config: loadConfig({
      NODE_ENV: "test",
      SLAUDE_DATA_DIR: dir,
      PORT: "0",
      SLAUDE_ENCRYPTION_KEY: keyB64,
      SLAUDE_CHROMIUM_PATH: "/usr/bin/chromium",
      PATH: process.env.PATH ?? "",
      ...env,
    }),
    registry: parseRegistry(
      {
        services: {
          devsvc: {
            displayName: "DevSvc",
            transport: { type: "stdio", command: "true", credentialEnv: { TOKEN: "{{access_token}}" } },
            capture: { strategy: "device", device },
          },
        },
      },
      "test",
    ),
    log,
    clock,
  });
  return app;
}

interface Msg {
  type: string;
  state?: string;
  message?: string;
  userCode?: string;
  verificationUri?: string;
  verificationUriComplete?: string;
  browser?: boolean;
}

/** Mints a link for Alice, loads its page once and attaches the viewer socket, as her browser would. */
async function openPage(a: RunningApp): Promise<{ sessionId: string; messages: Msg[]; ws: WebSocket; status: number }> {
  const m = await a.logins.mint({ ...THREAD, userId: ALICE, service: "devsvc" });
  const res = await fetch(`${a.url}${new URL(m.url).pathname}`, { redirect: "manual" });
  await res.text();
  const cookie = res.headers.get("set-cookie")?.split(";")[0] ?? "";
  const messages: Msg[] = [];
  const ws = new WebSocket(`${a.url.replace("http", "ws")}/login/ws?s=${encodeURIComponent(m.sessionId)}`, {
    headers: { origin: a.url, cookie },
  });
  ws.on("message", (d) => messages.push(JSON.parse(String(d)) as Msg));
  ws.on("error", () => undefined);
  if (res.status === 200) {
    await new Promise((resolve) => ws.once("open", resolve));
    // The page's first message, as live-view.js sends it: the flow attaches on it.
    ws.send(JSON.stringify({ type: "viewport", width: 1024, height: 768 }));
  }
  return { sessionId: m.sessionId, messages, ws, status: res.status };
}

/** The device code message the page got, and the fake server's record of that authorization. */
async function codeShown(messages: Msg[]): Promise<{ msg: Msg; auth: DeviceAuthorization }> {
  const msg = await vi.waitFor(
    () => {
      const found = messages.find((x) => x.type === "device_code");
      if (!found) throw new Error(`no device code yet: ${JSON.stringify(messages.map((x) => x.type))}`);
      return found;
    },
    { timeout: 20_000 },
  );
  const auth = as!.authorizations.find((x) => x.userCode === msg.userCode);
  expect(auth).toBeDefined();
  return { msg, auth: auth! };
}

/** Advances the clock by `ms` and waits until the server has seen `polls` token polls. */
async function pollTo(clock: ManualClock, auth: DeviceAuthorization, ms: number, polls: number): Promise<void> {
  await clock.advanceAsync(ms);
  await vi.waitFor(() => expect(auth.polls.length).toBe(polls), { timeout: 20_000 });
}

/** Nothing secret from the grant is in the log or the audit trail. */
async function expectNoSecrets(a: RunningApp, auth: DeviceAuthorization): Promise<void> {
  const audit = JSON.stringify(await a.store.audit.query({}));
  const logs = log.lines.join("\n");
  for (const secret of [auth.deviceCode, auth.accessToken, auth.userCode]) {
    expect(logs).not.toContain(secret);
    expect(audit).not.toContain(secret);
  }
}

describe("device-code login", () => {
  it("shows the URL and code on the private page, polls through authorization_pending, and stores an oauth credential for the minting user", async () => {
    const clock = new ManualClock(START);
    const a = await boot(clock);
    const { sessionId, messages, ws } = await openPage(a);
    const { msg, auth } = await codeShown(messages);
    expect(messages.find((x) => x.type === "strategy")).toMatchObject({ strategy: "device", browser: false });
    expect(msg.verificationUri).toBe(`${as!.url}/device`);
    expect(msg.verificationUriComplete).toBe(`${as!.url}/device?user_code=${encodeURIComponent(auth.userCode)}`);
    expect(a.logins.activeBrowsers).toBe(0);
    await pollTo(clock, auth, 5000, 1);
    await pollTo(clock, auth, 5000, 2);
    as!.approve(auth.userCode);
    await pollTo(clock, auth, 5000, 3);
    // Polled at the server's interval, never faster.
    expect(auth.polls.map((t) => t - START)).toEqual([5000, 10000, 15000]);
    const conn = await vi.waitFor(
      async () => {
        const [c] = await a.store.connections.list({ service: "devsvc" });
        if (!c) throw new Error("not stored yet");
        return c;
      },
      { timeout: 20_000 },
    );
    expect(conn).toMatchObject({ ownerUserId: ALICE, scope: "thread", channelId: THREAD.channelId, status: "active" });
    const cred = new Vault(KeyRing.fromBase64(keyB64)).openCredential(conn.sealed, bindingOf(conn));
    expect(cred).toMatchObject({
      kind: "oauth",
      accessToken: auth.accessToken,
      tokenType: "Bearer",
      expiresAt: START + 15000 + 3600_000,
      client: { tokenEndpoint: `${as!.url}/token`, clientId: "slaude-device" },
    });
    await vi.waitFor(() => expect(messages.some((x) => x.type === "status" && x.state === "captured")).toBe(true), {
      timeout: 10_000,
    });
    expect((await a.store.loginSessions.get(sessionId))?.status).toBe("completed");
    const done = await a.store.audit.query({ event: "login_completed" });
    expect(done.map((r) => [r.callerUserId, r.decision])).toEqual([[ALICE, "device"]]);
    await expectNoSecrets(a, auth);
    ws.close();
  });

  it("slow_down widens the polling interval by 5 seconds", async () => {
    const clock = new ManualClock(START);
    const a = await boot(clock);
    const { messages, ws } = await openPage(a);
    const { auth } = await codeShown(messages);
    auth.queued.push("slow_down");
    await pollTo(clock, auth, 5000, 1);
    as!.approve(auth.userCode);
    // 5 s later the old interval would poll; the widened one (10 s) must not. A poll only starts when
    // a clock timer fires, and the fake records each poll at the clock's time: the times below prove it.
    await clock.advanceAsync(5000);
    expect(auth.polls).toHaveLength(1);
    await pollTo(clock, auth, 5000, 2);
    expect(auth.polls.map((t) => t - START)).toEqual([5000, 15000]);
    await vi.waitFor(async () => expect(await a.store.connections.list({ service: "devsvc" })).toHaveLength(1), {
      timeout: 20_000,
    });
    await expectNoSecrets(a, auth);
    ws.close();
  });

  for (const [end, act, words] of [
    ["access_denied", (s: FakeDeviceAs, c: string) => s.deny(c), "declined"],
    ["expired_token", (s: FakeDeviceAs, c: string) => s.expire(c), "expired"],
  ] as const) {
    it(`${end} ends the login with a clear, secret-free message and an audit row; nothing is stored`, async () => {
      const clock = new ManualClock(START);
      const a = await boot(clock);
      const { sessionId, messages, ws } = await openPage(a);
      const { auth } = await codeShown(messages);
      await pollTo(clock, auth, 5000, 1);
      act(as!, auth.userCode);
      await pollTo(clock, auth, 5000, 2);
      const failed = await vi.waitFor(
        () => {
          const m = messages.find((x) => x.type === "status" && x.state === "failed");
          if (!m) throw new Error("not failed yet");
          return m;
        },
        { timeout: 20_000 },
      );
      expect(failed.message).toContain(words);
      expect(failed.message).toContain("Nothing was stored");
      for (const secret of [auth.deviceCode, auth.userCode, auth.accessToken])
        expect(failed.message).not.toContain(secret);
      expect((await a.store.loginSessions.get(sessionId))?.status).toBe("failed");
      const refused = await a.store.audit.query({ event: "login_refused" });
      expect(refused.map((r) => [r.callerUserId, r.service, r.decision])).toEqual([[ALICE, "devsvc", `device_${end}`]]);
      expect(await a.store.connections.list({})).toHaveLength(0);
      // The flow is over: no more polls however far time moves.
      await clock.advanceAsync(60_000);
      expect(auth.polls).toHaveLength(2);
      await expectNoSecrets(a, auth);
      ws.close();
    });
  }

  it("device flows share the login concurrency cap", async () => {
    const clock = new ManualClock(START);
    const a = await boot(clock, { SLAUDE_LOGIN_MAX_CONCURRENT: "1" });
    const first = await openPage(a);
    await codeShown(first.messages);
    const second = await openPage(a);
    expect(second.status).toBe(503);
    expect(a.logins.slotsInUse).toBe(1);
    first.ws.close();
    second.ws.close();
  });

  it("the live-view page in a real browser shows the code as text and the URL as a noopener link", async () => {
    const hostile = `<img src=x onerror="document.title='pwned'">`;
    const clock = new ManualClock(START);
    const a = await boot(clock, {}, hostile);
    const link = await a.logins.mint({ ...THREAD, userId: ALICE, service: "devsvc" });
    const browser = await chromium.launch({
      executablePath: "/usr/bin/chromium",
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"],
    });
    try {
      const page = await browser.newPage();
      expect((await page.goto(a.url + new URL(link.url).pathname))?.status()).toBe(200);
      await page.waitForSelector("#device:not([hidden])", { timeout: 20_000 });
      expect(await page.locator("#device-code").textContent()).toBe(hostile);
      expect(await page.locator("#device-code img").count()).toBe(0);
      const url = page.locator("#device-url");
      expect(await url.textContent()).toBe(`${as!.url}/device`);
      const href = new URL((await url.getAttribute("href"))!);
      expect(href.searchParams.get("user_code")).toBe(hostile);
      // The page names the host the link really opens (issue 21, finding 2), read from the link itself.
      expect(await page.locator("#device-host").textContent()).toBe(href.host);
      expect(href.host).toBe(new URL(as!.url).host);
      expect(await url.getAttribute("rel")).toBe("noopener noreferrer");
      expect(await page.title()).not.toBe("pwned");
      // The user declines on their device: the page hides the code and says so.
      as!.deny(hostile);
      await clock.advanceAsync(5000);
      await page.waitForSelector("#status[data-state=failed]", { timeout: 20_000 });
      expect(await page.locator("#device").isHidden()).toBe(true);
      expect(await page.locator("#status").textContent()).toContain("declined");
    } finally {
      await browser.close();
    }
  });
});
