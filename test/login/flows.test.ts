// The login flow end to end, as a user lives it: a second Chromium (the user's own browser) opens
// the live-view page and signs in to a fake identity provider by clicking and typing INTO THE
// SCREENCAST IMAGE, for each capture strategy. Real Chromium on both sides, real app, real SQLite.
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { ManualClock } from "../../src/clock/clock.js";
import { loadConfig } from "../../src/config/env.js";
import { parseRegistry } from "../../src/config/registry.js";
import { createLogger } from "../../src/log/logger.js";
import { chromiumBrowsers } from "../../src/login/browser/browser-factory.js";
import type { LoginBrowserFactory } from "../../src/login/login-service.js";
import { bindingOf } from "../../src/vault/binding.js";
import { KeyRing } from "../../src/vault/keyring.js";
import { Vault } from "../../src/vault/vault.js";
import { centerOf, type FakeIdp, LOGIN_LAYOUT, SSO_LAYOUT, startFakeIdp } from "../fixtures/idp/fake-idp.js";
import { until } from "../support/until.js";

const ALICE = "UALICE01";
const PUBLIC_URL = "http://slaude.test";
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

let idp: FakeIdp;
let viewerBrowser: Browser;
let app: RunningApp;
let dir: string;
let keyB64: string;
/** Every login browser the app launched, to prove their processes are gone. */
let launched: { pids(): number[] }[] = [];
const recordingBrowsers: LoginBrowserFactory = async (req) => {
  const b = await chromiumBrowsers({ chromiumPath: CHROMIUM, log: createLogger("error") })(req);
  launched.push(b as unknown as { pids(): number[] });
  return b;
};
const THREAD = { teamId: "T1", channelId: "C1", threadTs: "1700000000.000100" };

function registryDoc(idpUrl: string) {
  const host = new URL(idpUrl).host;
  const transport = { type: "stdio", command: "true", credentialEnv: { TOKEN: "{{token}}" } };
  return {
    services: {
      cookiesvc: {
        transport: { ...transport, credentialEnv: { COOKIE: "{{cookie_header}}" } },
        capture: { strategy: "cookie", startUrl: `${idpUrl}/login`, requiredCookies: ["idp_session"] },
        loginDomains: [host],
      },
      ssosvc: {
        transport: { ...transport, credentialEnv: { COOKIE: "{{cookie_header}}" } },
        capture: { strategy: "cookie", startUrl: `${idpUrl}/sso`, requiredCookies: ["idp_session"] },
        loginDomains: [host],
      },
      pastesvc: {
        transport,
        capture: {
          strategy: "paste",
          instructions: "Copy the token shown on the page.",
          startUrl: `${idpUrl}/login?next=/tokens`,
          fields: [{ name: "token", label: "API token" }],
        },
        loginDomains: [host],
      },
      oauthsvc: {
        transport: { ...transport, credentialEnv: { TOKEN: "{{access_token}}" } },
        capture: {
          strategy: "oauth",
          authorizationUrl: `${idpUrl}/authorize`,
          tokenUrl: `${idpUrl}/token`,
          clientId: "slaude-test",
          scopes: ["read"],
        },
        loginDomains: [host],
      },
    },
  };
}

beforeAll(async () => {
  idp = await startFakeIdp({ clients: [{ clientId: "slaude-test", redirectUris: [`${PUBLIC_URL}/login/callback`] }] });
  // The user's own browser: it only ever talks to the broker's live-view page.
  viewerBrowser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
});
afterAll(async () => {
  await viewerBrowser?.close();
  await idp?.close();
});

beforeEach(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-flows-"));
  keyB64 = randomBytes(32).toString("base64");
  launched = [];
  app = await startApp({
    browsers: recordingBrowsers,
    config: loadConfig({
      NODE_ENV: "test",
      SLAUDE_DATA_DIR: dir,
      PORT: "0",
      SLAUDE_ENCRYPTION_KEY: keyB64,
      SLAUDE_PUBLIC_URL: PUBLIC_URL,
      SLAUDE_CHROMIUM_PATH: CHROMIUM,
      SLAUDE_LOGIN_TIMEOUT_SECONDS: "60",
      PATH: process.env.PATH ?? "",
    }),
    registry: parseRegistry(registryDoc(idp.url), "test"),
  });
});
afterEach(async () => {
  await app.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Opens the link in the user's browser and waits for the first streamed frame. */
async function openLiveView(service: string, waitForFrame = true): Promise<{ page: Page; sessionId: string }> {
  const link = await app.logins.mint({ ...THREAD, userId: ALICE, service });
  const ctx = await viewerBrowser.newContext({ viewport: { width: 1100, height: 900 } });
  const page = await ctx.newPage();
  const res = await page.goto(app.url + new URL(link.url).pathname);
  expect(res?.status()).toBe(200);
  if (waitForFrame) await page.waitForSelector("#screen.live", { timeout: 20_000 });
  return { page, sessionId: link.sessionId };
}

/** Clicks the point (x, y) of the confined page by clicking the matching spot of the streamed image. */
async function clickRemote(page: Page, at: { x: number; y: number }, popup = false): Promise<void> {
  if (popup) await page.waitForSelector("#screen.popup", { timeout: 10_000 });
  const box = (await page.locator("#screen").boundingBox())!;
  const natural = await page.locator("#screen").evaluate((img) => {
    const i = img as unknown as { naturalWidth: number; naturalHeight: number };
    return { w: i.naturalWidth, h: i.naturalHeight };
  });
  // The image may be shown smaller than its pixels; the page maps back, as a user's click would.
  await page.mouse.click(box.x + (at.x * box.width) / natural.w, box.y + (at.y * box.height) / natural.h);
}

async function typeRemote(page: Page, text: string): Promise<void> {
  await page.keyboard.type(text, { delay: 15 });
}

async function signInThroughScreencast(page: Page, user: string, password: string, popup = false): Promise<void> {
  await clickRemote(page, centerOf(LOGIN_LAYOUT.username), popup);
  await typeRemote(page, user);
  await clickRemote(page, centerOf(LOGIN_LAYOUT.password), popup);
  await typeRemote(page, `${password}x`);
  await page.keyboard.press("Backspace"); // special keys travel too
  await page.keyboard.press("Enter");
}

function vault() {
  return new Vault(KeyRing.fromBase64(keyB64));
}

async function statusText(page: Page): Promise<string> {
  return (await page.locator("#status").textContent()) ?? "";
}

describe("capture through the screencast", () => {
  it("cookie: signs in by clicking and typing into the stream; the session cookie is captured for the minted user", async () => {
    const { page, sessionId } = await openLiveView("cookiesvc");
    await signInThroughScreencast(page, "alice", "alice-password");
    await until(
      async () => (await app.store.connections.list({ service: "cookiesvc" })).length === 1,
      30_000,
      "cookie capture",
    );
    const [conn] = await app.store.connections.list({ service: "cookiesvc" });
    expect(conn).toMatchObject({ ownerUserId: ALICE, scope: "thread", channelId: THREAD.channelId, status: "active" });
    const cred = vault().openCredential(conn!.sealed, bindingOf(conn!));
    expect(cred.kind).toBe("cookies");
    expect(cred.kind === "cookies" && cred.cookies.map((c) => c.name)).toContain("idp_session");
    await until(async () => (await statusText(page)).includes("Connected"), 10_000, "captured status");
    expect((await app.store.loginSessions.get(sessionId))?.status).toBe("completed");
    // The browser is torn down after capture.
    await until(() => app.logins.activeBrowsers === 0, 10_000, "browser teardown");
    await page.context().close();
  });

  it("cookie with SSO popup: the window.open popup is followed, signed into, and the stream returns", async () => {
    const { page } = await openLiveView("ssosvc");
    // A first frame can come before the SSO page has drawn its button (a click on it then lands on
    // nothing): click until the popup is on screen. window.open reuses the one named window.
    await until(
      async () => {
        await clickRemote(page, centerOf(SSO_LAYOUT.button));
        return page.waitForSelector("#screen.popup", { timeout: 3_000 }).then(
          () => true,
          () => false,
        );
      },
      30_000,
      "the SSO popup on screen",
    );
    await signInThroughScreencast(page, "alice", "alice-password", true);
    await until(
      async () => (await app.store.connections.list({ service: "ssosvc" })).length === 1,
      30_000,
      "sso capture",
    );
    await page.context().close();
  });

  it("oauth: PKCE authorization runs in the confined browser, the redirect is intercepted and the code exchanged server-side", async () => {
    const before = idp.tokenRequests.length;
    const { page } = await openLiveView("oauthsvc");
    await signInThroughScreencast(page, "alice", "alice-password");
    await until(
      async () => (await app.store.connections.list({ service: "oauthsvc" })).length === 1,
      30_000,
      "oauth capture",
    );
    const [conn] = await app.store.connections.list({ service: "oauthsvc" });
    const cred = vault().openCredential(conn!.sealed, bindingOf(conn!));
    expect(cred.kind).toBe("oauth");
    expect(cred.kind === "oauth" && idp.userOfAccessToken(cred.accessToken)).toBe("alice");
    const exchanges = idp.tokenRequests.slice(before).filter((r) => r.grant_type === "authorization_code");
    expect(exchanges).toHaveLength(1);
    expect(exchanges[0]?.code_verifier).toBeTruthy();
    // The redirect never left the confined browser: the broker's public URL was never requested.
    expect(idp.requests.some((r) => r.includes("/login/callback"))).toBe(false);
    await page.context().close();
  });
});

describe("paste", () => {
  it("paste: the token page is streamed for reference and the token is typed into the private form", async () => {
    const { page } = await openLiveView("pastesvc");
    await page.waitForSelector("#paste.live");
    const token = `tok-${randomBytes(8).toString("hex")}`;
    await page.fill("#fields input[name=token]", token);
    expect(await page.getAttribute("#fields input[name=token]", "type")).toBe("password");
    await page.click("#paste button[type=submit]");
    await until(
      async () => (await app.store.connections.list({ service: "pastesvc" })).length === 1,
      15_000,
      "paste capture",
    );
    const [conn] = await app.store.connections.list({ service: "pastesvc" });
    expect(vault().openCredential(conn!.sealed, bindingOf(conn!))).toEqual({ kind: "fields", fields: { token } });
    await until(() => app.logins.activeBrowsers === 0, 10_000, "teardown");
    await page.context().close();
  });
});

describe("refusals and lifecycle", () => {
  it("a cancelled login stores nothing and leaves no Chromium process", async () => {
    const { page, sessionId } = await openLiveView("cookiesvc");
    // The first frame (the login page at its DOMContentLoaded) can come before the browser's start returns.
    await until(() => app.logins.activeBrowsers === 1, 20_000, "the browser started");
    await page.click("#cancel");
    await until(async () => (await app.store.loginSessions.get(sessionId))?.status === "cancelled", 10_000, "cancel");
    await until(() => app.logins.activeBrowsers === 0, 10_000, "teardown");
    expect(await app.store.connections.list({})).toHaveLength(0);
    expect(launched.length).toBeGreaterThan(0);
    await until(() => livePids().length === 0, 10_000, "chromium processes gone");
    await page.context().close();
  });

  it("a timeout ends the flow and the browser process is gone", async () => {
    await app.close();
    // The flow's deadline runs on the app's clock: the test moves time instead of waiting for it.
    const clock = new ManualClock(Date.now());
    app = await startApp({
      browsers: recordingBrowsers,
      clock,
      config: loadConfig({
        NODE_ENV: "test",
        SLAUDE_DATA_DIR: dir,
        PORT: "0",
        SLAUDE_ENCRYPTION_KEY: keyB64,
        SLAUDE_PUBLIC_URL: PUBLIC_URL,
        SLAUDE_LOGIN_TIMEOUT_SECONDS: "4",
        PATH: process.env.PATH ?? "",
      }),
      registry: parseRegistry(registryDoc(idp.url), "test"),
    });
    const { page, sessionId } = await openLiveView("cookiesvc", false);
    await until(() => launched.length > 0, 15_000, "browser launch");
    expect((await app.store.loginSessions.get(sessionId))?.status).toBe("opened");
    await clock.advanceAsync(4_000);
    await until(async () => (await app.store.loginSessions.get(sessionId))?.status === "expired", 15_000, "timeout");
    await until(() => app.logins.activeBrowsers === 0, 10_000, "teardown");
    await until(async () => (await statusText(page)).toLowerCase().includes("timed out"), 5_000, "timeout status");
    expect(launched.length).toBeGreaterThan(0);
    await until(() => livePids().length === 0, 10_000, "chromium processes gone");
    await page.context().close();
  });
});

/** Live (non-zombie) processes of every login browser the app launched. */
function livePids(): number[] {
  return launched
    .flatMap((b) => b.pids())
    .filter((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
        return !stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
      } catch {
        return false;
      }
    });
}
