// One-time login links and the paste strategy, through the real HTTP page and WebSocket of a
// running app. (Browser strategies, which need Chromium, are in test/login/flows.test.ts.)
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import WebSocket from "ws";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { ManualClock } from "../../src/clock/clock.js";
import { loadConfig } from "../../src/config/env.js";
import { parseRegistry } from "../../src/config/registry.js";
import { memoryLogger } from "../../src/log/logger.js";
import { bindingOf } from "../../src/vault/binding.js";
import { KeyRing } from "../../src/vault/keyring.js";
import { Vault } from "../../src/vault/vault.js";
import { fixtureRegistryDoc } from "../integration/broker-harness.js";
import { until } from "../support/until.js";

const ALICE = "UALICE01";
let app: RunningApp;
let dir: string;
let keyB64: string;
let log: ReturnType<typeof memoryLogger>;

function registry() {
  const doc = fixtureRegistryDoc() as { services: Record<string, unknown> };
  doc.services.pasted = {
    transport: { type: "stdio", command: "true", credentialEnv: { TOKEN: "{{token}}" } },
    capture: {
      strategy: "paste",
      instructions: "Create a token in settings.",
      fields: [{ name: "token", label: "API token", pattern: "^tok_[a-z0-9]{8,}$" }],
    },
    scopes: ["thread", "user"],
  };
  return parseRegistry(doc, "test");
}

async function boot(env: Record<string, string> = {}, clock?: ManualClock) {
  log = memoryLogger("debug");
  return startApp({
    ...(clock ? { clock } : {}),
    config: loadConfig({
      NODE_ENV: "test",
      SLAUDE_DATA_DIR: dir,
      PORT: "0",
      SLAUDE_ENCRYPTION_KEY: keyB64,
      PATH: process.env.PATH ?? "",
      ...env,
    }),
    registry: registry(),
    log,
    browsers: async () => {
      throw new Error("no browser in this test");
    },
  });
}

beforeEach(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-login-"));
  keyB64 = randomBytes(32).toString("base64");
  app = await boot();
});
afterEach(async () => {
  await app.close();
  rmSync(dir, { recursive: true, force: true });
});

const THREAD = { teamId: "T1", channelId: "C1", threadTs: "1700000000.000100" };

async function mint(user = ALICE) {
  const m = await app.logins.mint({ ...THREAD, userId: user, service: "pasted" });
  // The minted URL names the public URL; tests reach the bound port.
  return { ...m, local: `${app.url}${new URL(m.url).pathname}` };
}

async function openPage(url: string, cookie?: string) {
  const res = await fetch(url, { headers: cookie ? { cookie } : {}, redirect: "manual" });
  return {
    status: res.status,
    cookie: res.headers.get("set-cookie")?.split(";")[0],
    html: await res.text(),
    csp: res.headers.get("content-security-policy"),
  };
}

function viewer(sessionId: string, cookie: string | undefined, origin = app.url) {
  const ws = new WebSocket(`${app.url.replace("http", "ws")}/login/ws?s=${encodeURIComponent(sessionId)}`, {
    headers: { origin, ...(cookie ? { cookie } : {}) },
  });
  const messages: Record<string, unknown>[] = [];
  ws.on("message", (d) => messages.push(JSON.parse(String(d)) as Record<string, unknown>));
  const opened = new Promise<boolean>((resolve) => {
    ws.once("open", () => resolve(true));
    ws.once("error", () => resolve(false));
    ws.once("unexpected-response", () => resolve(false));
  });
  return { ws, messages, opened, send: (m: unknown) => ws.send(JSON.stringify(m)) };
}

describe("one-time login links", () => {
  it("the first load consumes the link and binds it to that browser; a second viewer is refused and audited", async () => {
    const link = await mint();
    const first = await openPage(link.local);
    expect(first.status).toBe(200);
    expect(first.cookie).toMatch(/^slaude_login=login_/);
    expect(first.csp).toContain("script-src 'nonce-");
    // The same browser may reload.
    expect((await openPage(link.local, first.cookie)).status).toBe(200);
    // Anyone else (no cookie, or a forged one) is refused.
    expect((await openPage(link.local)).status).toBe(410);
    expect((await openPage(link.local, "slaude_login=login_x.forged")).status).toBe(410);
    const refused = await app.store.audit.query({ event: "login_refused" });
    expect(refused.map((r) => r.decision)).toContain("second_viewer");
    // The link token is a bearer secret: never in logs or audit.
    const token = new URL(link.url).pathname.split("/").pop()!;
    expect(log.lines.join("\n")).not.toContain(token);
    expect(JSON.stringify(await app.store.audit.query({}))).not.toContain(token);
  });

  it("refuses to mint a thread-scoped link without a thread (before anyone signs in)", async () => {
    await expect(
      app.logins.mint({
        teamId: "T1",
        channelId: "C1",
        threadTs: null,
        userId: ALICE,
        service: "pasted",
        scope: "thread",
      }),
    ).rejects.toThrow(/needs a thread/);
    await expect(
      app.logins.mint({ teamId: "T1", channelId: "C1", threadTs: null, userId: ALICE, service: "nope" }),
    ).rejects.toThrow(/unknown service/);
  });

  it("an expired link and an invalid link are refused; nothing is consumed", async () => {
    await app.close();
    const clock = new ManualClock(Date.now());
    app = await boot({ SLAUDE_LOGIN_LINK_TTL_SECONDS: "1" }, clock);
    const link = await mint();
    clock.advance(1_000);
    expect((await openPage(link.local)).status).toBe(410);
    expect((await openPage(`${app.url}/login/l/${"A".repeat(43)}`)).status).toBe(404);
    expect((await openPage(`${app.url}/login/l/short`)).status).toBe(404);
  });

  it("the WebSocket only attaches the browser that opened the link, from our origin", async () => {
    const link = await mint();
    const page = await openPage(link.local);
    const sessionId = page.cookie!.split("=")[1]!.split(".")[0]!;
    expect(await viewer(sessionId, undefined).opened).toBe(false);
    expect(await viewer(sessionId, `slaude_login=${sessionId}.wrongsecret`).opened).toBe(false);
    expect(await viewer(sessionId, page.cookie, "https://evil.example").opened).toBe(false);
    const v = viewer(sessionId, page.cookie);
    expect(await v.opened).toBe(true);
    v.ws.close();
  });
});

describe("login time runs on the app's clock", () => {
  it("a page that never connects ends as abandoned once the grace period has passed on the clock, not before", async () => {
    await app.close();
    const clock = new ManualClock(Date.now());
    app = await boot({ SLAUDE_LOGIN_DETACH_GRACE_SECONDS: "60" }, clock);
    const link = await mint();
    const page = await openPage(link.local);
    expect(page.status).toBe(200);
    await clock.advanceAsync(59_000);
    expect((await app.store.loginSessions.get(link.sessionId))?.status).toBe("opened");
    expect(app.logins.activeFlows).toBe(1);
    await clock.advanceAsync(1_000);
    await vi.waitFor(async () => expect((await app.store.loginSessions.get(link.sessionId))?.status).toBe("expired"), {
      timeout: 10_000,
    });
    expect((await app.store.audit.query({ event: "login_refused" })).map((r) => r.decision)).toContain("abandoned");
    expect(app.logins.activeFlows).toBe(0);
  });
});

describe("paste strategy", () => {
  it("stores the pasted token encrypted, bound to the user the link was minted for", async () => {
    const link = await mint();
    const page = await openPage(link.local);
    const sessionId = page.cookie!.split("=")[1]!.split(".")[0]!;
    const v = viewer(sessionId, page.cookie);
    expect(await v.opened).toBe(true);
    v.send({ type: "viewport", width: 800, height: 600 });
    await until(() => v.messages.some((m) => m.type === "paste_form"));
    // Bad input gets a clear message and stores nothing.
    v.send({ type: "paste", fields: { token: "not-a-token" } });
    await until(() => v.messages.some((m) => m.type === "status" && String(m.message).includes("does not look right")));
    expect(await app.store.connections.list({})).toHaveLength(0);
    // Unknown or malformed messages are ignored.
    v.ws.send("{not json");
    v.send({ type: "paste", fields: { token: "x" }, extra: 1 });

    const token = `tok_${randomBytes(8).toString("hex")}`;
    v.send({ type: "paste", fields: { token } });
    await until(() => v.messages.some((m) => m.type === "status" && m.state === "captured"));
    const [conn] = await app.store.connections.list({});
    expect(conn).toMatchObject({
      ownerUserId: ALICE,
      service: "pasted",
      scope: "thread",
      channelId: THREAD.channelId,
      threadTs: THREAD.threadTs,
      status: "active",
    });
    const cred = new Vault(KeyRing.fromBase64(keyB64)).openCredential(conn!.sealed, bindingOf(conn!));
    expect(cred).toEqual({ kind: "fields", fields: { token } });
    expect((await app.store.loginSessions.get(sessionId))?.status).toBe("completed");
    expect((await app.store.audit.query({ event: "login_completed" }))[0]).toMatchObject({
      callerUserId: ALICE,
      connectionId: conn!.id,
    });
    // The token is nowhere in plaintext: logs, audit, database files.
    expect(log.lines.join("\n")).not.toContain(token);
    expect(JSON.stringify(await app.store.audit.query({}))).not.toContain(token);
    for (const f of readdirSync(dir).filter((x) => x.startsWith("slaude.db")))
      expect(readFileSync(path.join(dir, f)).includes(Buffer.from(token))).toBe(false);
    // The link cannot be used again.
    expect((await openPage(link.local)).status).toBe(410);
    v.ws.close();
  });

  it("cancel ends the flow and stores nothing", async () => {
    const link = await mint();
    const page = await openPage(link.local);
    const sessionId = page.cookie!.split("=")[1]!.split(".")[0]!;
    const v = viewer(sessionId, page.cookie);
    await v.opened;
    v.send({ type: "viewport", width: 800, height: 600 });
    await until(() => v.messages.some((m) => m.type === "paste_form"));
    v.send({ type: "cancel" });
    await until(() => v.messages.some((m) => m.type === "status" && m.state === "cancelled"));
    v.send({ type: "paste", fields: { token: "tok_abcdefgh1" } });
    // An ended flow drops input without a reply or a log line: no event marks it handled, so a wait.
    await new Promise((r) => setTimeout(r, 200));
    expect(await app.store.connections.list({})).toHaveLength(0);
    expect((await app.store.loginSessions.get(sessionId))?.status).toBe("cancelled");
    v.ws.close();
  });
});
