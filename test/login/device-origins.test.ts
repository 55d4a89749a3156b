// Issue 21, findings 1 and 2, for device login (RFC 8628): a hostile https authorization server
// whose metadata names a plain-http loopback service as its device or token endpoint, or another
// origin; a device response whose shown link and opened link are on different hosts. Real https
// fakes on loopback (a throwaway certificate trusted by the fetch the grant is given), each
// counting the requests it got; the login page in a real app shows what the broker accepted.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import WebSocket from "ws";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { ManualClock } from "../../src/clock/clock.js";
import { loadConfig } from "../../src/config/env.js";
import { parseRegistry } from "../../src/config/registry.js";
import { memoryLogger } from "../../src/log/logger.js";
import { startDeviceGrant } from "../../src/login/oauth/device.js";
import { OAuthError } from "../../src/login/oauth/errors.js";
import { type FakeIdp, type FakeIdpOptions, startFakeIdp } from "../fixtures/idp/fake-idp.js";
import { testCert, trustingFetch } from "../support/tls.js";

const CLIENT = "slaude-device";
const open: FakeIdp[] = [];
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  await Promise.all(open.splice(0).map((i) => i.close()));
});

async function idp(o: FakeIdpOptions = {}): Promise<FakeIdp> {
  const i = await startFakeIdp({ device: true, clients: [{ clientId: CLIENT, redirectUris: ["x:"] }], ...o });
  open.push(i);
  return i;
}
const tlsIdp = (o: FakeIdpOptions = {}) => idp({ ...o, tls: testCert() });
const clock = new ManualClock(Date.UTC(2026, 0, 5, 9, 0, 0));
const tls = { clock, fetch: trustingFetch(testCert().cert) };
const byIssuer = (issuer: string, allowedOrigins: string[] = []) => ({
  issuer,
  clientId: CLIENT,
  scopes: ["read"],
  allowedOrigins,
});
const originOf = (i: FakeIdp) => new URL(i.url).origin;

/** The OAuthError a promise rejects with (fails the test if it resolves). */
async function refusal(p: Promise<unknown>): Promise<OAuthError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OAuthError);
  return err as OAuthError;
}

describe("discovered device endpoints (finding 1)", () => {
  it("an https issuer naming a loopback http device endpoint is refused, and nothing is POSTed there", async () => {
    const internal = await idp();
    const as = await tlsIdp({
      metadata: () => ({ device_authorization_endpoint: `${internal.url}/internal/admin/device` }),
    });
    const err = await refusal(startDeviceGrant(byIssuer(as.issuer), tls));
    expect(err.code).toBe("insecure_endpoint");
    expect(err.message).toBe(
      `device_authorization_endpoint ${internal.url} was named by https metadata of ${as.url} and must use https too`,
    );
    expect(internal.requests).toEqual([]);
  });

  it("an https issuer naming a loopback http token endpoint is refused before the login starts", async () => {
    const internal = await idp();
    const as = await tlsIdp({ metadata: () => ({ token_endpoint: `${internal.url}/internal/admin/token` }) });
    expect((await refusal(startDeviceGrant(byIssuer(as.issuer), tls))).code).toBe("insecure_endpoint");
    // Refused before the device authorization request: no code was handed out, nothing would be polled.
    expect(as.deviceCodes).toEqual([]);
    expect(internal.requests).toEqual([]);
  });

  it("production refuses loopback http even when the issuer itself is loopback, and configured endpoints too", async () => {
    const local = await idp();
    expect((await refusal(startDeviceGrant(byIssuer(local.issuer), { clock, production: true }))).message).toContain(
      "NODE_ENV=production",
    );
    const configured = {
      deviceAuthorizationEndpoint: local.deviceAuthorizationEndpoint,
      tokenEndpoint: local.tokenEndpoint,
      clientId: CLIENT,
      scopes: [],
      allowedOrigins: [],
    };
    expect((await refusal(startDeviceGrant(configured, { clock, production: true }))).code).toBe("insecure_endpoint");
    expect(local.requests).toEqual([]);
    // Outside production a loopback issuer may use its own loopback endpoints (development).
    const grant = await startDeviceGrant(byIssuer(local.issuer), { clock });
    expect(grant.verificationUri).toBe(`${local.url}/activate`);
  });

  it("a device or token endpoint on another origin is refused unless the registry allows it", async () => {
    const other = await tlsIdp();
    for (const field of ["device_authorization_endpoint", "token_endpoint"]) {
      const target = field === "token_endpoint" ? other.tokenEndpoint : other.deviceAuthorizationEndpoint;
      const as = await tlsIdp({ metadata: () => ({ [field]: target }) });
      const err = await refusal(startDeviceGrant(byIssuer(as.issuer), tls));
      expect(err.message).toContain(`${field} ${originOf(other)} is not on the origin of ${originOf(as)}`);
      expect(other.requests).toEqual([]);
    }
    const as = await tlsIdp({ metadata: () => ({ token_endpoint: other.tokenEndpoint }) });
    const grant = await startDeviceGrant(byIssuer(as.issuer, [originOf(other)]), tls);
    expect(await grant.poll().catch((e: unknown) => (e as OAuthError).code)).toBe("invalid_grant");
    // The poll went where the registry allowed (the other server knows no such code).
    expect(other.requests).toEqual(["POST /token"]);
  });

  it("a same-origin https issuer logs in end to end, and the tokens name its https token endpoint", async () => {
    const as = await tlsIdp();
    const grant = await startDeviceGrant(byIssuer(as.issuer), tls);
    expect(grant.verificationUri).toBe(`${as.url}/activate`);
    expect(await grant.poll()).toBe("pending");
    as.approveDevice(grant.userCode, "alice");
    const r = await grant.poll();
    if (typeof r === "string" || r.tokens.kind !== "oauth") throw new Error("not approved");
    expect(as.userOfAccessToken(r.tokens.accessToken)).toBe("alice");
    expect(r.tokens.client).toEqual({ tokenEndpoint: as.tokenEndpoint, clientId: CLIENT });
  });
});

describe("the links the user is shown (finding 2)", () => {
  it("refuses a verification_uri_complete that opens another host than verification_uri shows", async () => {
    const as = await tlsIdp({
      deviceResponse: (_b, code) => ({ verification_uri_complete: `https://phish.invalid/activate?user_code=${code}` }),
    });
    const err = await refusal(startDeviceGrant(byIssuer(as.issuer), tls));
    expect(err.code).toBe("insecure_endpoint");
    expect(err.message).toContain("verification_uri_complete https://phish.invalid");
  });

  it("refuses links on another origin, both or one, unless allowed; allowed ones must still share one origin", async () => {
    const www = "https://www.vendor.example";
    const both = await tlsIdp({
      deviceResponse: (_b, code) => ({
        verification_uri: `${www}/device`,
        verification_uri_complete: `${www}/device?c=${code}`,
      }),
    });
    expect((await refusal(startDeviceGrant(byIssuer(both.issuer), tls))).message).toContain(
      `verification_uri ${www} is not on the origin`,
    );
    const g = await startDeviceGrant(byIssuer(both.issuer, [www]), tls);
    expect([new URL(g.verificationUri).origin, new URL(g.verificationUriComplete!).origin]).toEqual([www, www]);

    const split = await tlsIdp({
      deviceResponse: (_b, code) => ({ verification_uri_complete: `${www}/device?c=${code}` }),
    });
    const err = await refusal(startDeviceGrant(byIssuer(split.issuer, [www]), tls));
    expect(err.message).toBe(
      `verification_uri_complete opens ${www} while verification_uri shows ${originOf(split)}: both must be on one origin`,
    );
  });

  it("refuses a plain-http or script link from an https issuer", async () => {
    for (const verification_uri of ["http://127.0.0.1:1/activate", "javascript:alert(1)"]) {
      const as = await tlsIdp({ deviceResponse: () => ({ verification_uri, verification_uri_complete: undefined }) });
      expect((await refusal(startDeviceGrant(byIssuer(as.issuer), tls))).code).toBe("insecure_endpoint");
    }
  });

  it("with configured endpoints, the links are held to the device endpoint's origin", async () => {
    const as = await tlsIdp({
      deviceResponse: () => ({
        verification_uri: "https://phish.invalid/activate",
        verification_uri_complete: undefined,
      }),
    });
    const configured = {
      deviceAuthorizationEndpoint: as.deviceAuthorizationEndpoint,
      tokenEndpoint: as.tokenEndpoint,
      clientId: CLIENT,
      scopes: [],
      allowedOrigins: [],
    };
    expect((await refusal(startDeviceGrant(configured, tls))).message).toContain(
      `is not on the origin of ${originOf(as)}`,
    );
    const fine = await tlsIdp();
    const ok = await startDeviceGrant(
      {
        ...configured,
        deviceAuthorizationEndpoint: fine.deviceAuthorizationEndpoint,
        tokenEndpoint: fine.tokenEndpoint,
      },
      tls,
    );
    expect(ok.verificationUriComplete).toBe(`${fine.url}/activate?user_code=${ok.userCode}`);
  });
});

/** Starts the real app with one device service on `as`'s configured endpoints; `env` adds variables. */
async function deviceApp(
  as: FakeIdp,
  env: Record<string, string> = {},
): Promise<{ app: RunningApp; log: ReturnType<typeof memoryLogger> }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-device-origins-"));
  const log = memoryLogger("debug");
  const device = {
    deviceAuthorizationEndpoint: as.deviceAuthorizationEndpoint,
    tokenEndpoint: as.tokenEndpoint,
    clientId: CLIENT,
  };
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const app: RunningApp = await startApp({
    config: loadConfig({
      NODE_ENV: "test",
      SLAUDE_DATA_DIR: dir,
      PORT: "0",
      SLAUDE_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
      PATH: process.env.PATH ?? "",
      ...env,
    }),
    registry: parseRegistry(
      {
        services: {
          devsvc: {
            transport: { type: "stdio", command: "true", credentialEnv: { TOKEN: "{{access_token}}" } },
            capture: { strategy: "device", device },
          },
        },
      },
      "test",
    ),
    log,
    clock: new ManualClock(Date.UTC(2026, 0, 5, 9, 0, 0)),
  });
  cleanups.push(() => app.close());
  return { app, log };
}

describe("in the running app", () => {
  it("with NODE_ENV=production a loopback http device server is never contacted", async () => {
    const as = await idp();
    const { app, log } = await deviceApp(as, {
      NODE_ENV: "production",
      SLAUDE_WORKSPACE: "none",
      SLAUDE_CHILD_UID_BASE: "200000",
    });
    const m = await app.logins.mint({
      teamId: "T1",
      channelId: "C1",
      threadTs: "1700000000.000100",
      userId: "UALICE01",
      service: "devsvc",
    });
    const res = await fetch(`${app.url}${new URL(m.url).pathname}`, { redirect: "manual" });
    await res.text();
    const ws = new WebSocket(`${app.url.replace("http", "ws")}/login/ws?s=${encodeURIComponent(m.sessionId)}`, {
      headers: { origin: app.url, cookie: res.headers.get("set-cookie")?.split(";")[0] ?? "" },
    });
    cleanups.push(() => ws.close());
    await new Promise((resolve) => ws.once("open", resolve));
    ws.send(JSON.stringify({ type: "viewport", width: 1024, height: 768 }));
    await vi.waitFor(async () => expect((await app.store.loginSessions.get(m.sessionId))?.status).toBe("failed"), {
      timeout: 20_000,
    });
    expect(log.lines.join("\n")).toContain("NODE_ENV=production");
    expect(as.requests).toEqual([]);
  });

  it("a device server whose links disagree fails the login on the private page, and no link is ever shown", async () => {
    const as = await idp({
      deviceResponse: (_b, code) => ({ verification_uri_complete: `https://phish.invalid/activate?user_code=${code}` }),
    });
    const { app, log } = await deviceApp(as);
    const m = await app.logins.mint({
      teamId: "T1",
      channelId: "C1",
      threadTs: "1700000000.000100",
      userId: "UALICE01",
      service: "devsvc",
    });
    const res = await fetch(`${app.url}${new URL(m.url).pathname}`, { redirect: "manual" });
    await res.text();
    const messages: { type: string; state?: string; message?: string }[] = [];
    const ws = new WebSocket(`${app.url.replace("http", "ws")}/login/ws?s=${encodeURIComponent(m.sessionId)}`, {
      headers: { origin: app.url, cookie: res.headers.get("set-cookie")?.split(";")[0] ?? "" },
    });
    cleanups.push(() => ws.close());
    ws.on("message", (d) => messages.push(JSON.parse(String(d)) as { type: string }));
    await new Promise((resolve) => ws.once("open", resolve));
    ws.send(JSON.stringify({ type: "viewport", width: 1024, height: 768 }));
    // The failure is the event that proves the outcome: once it is in, nothing more comes for this flow.
    await vi.waitFor(() => expect(messages.some((x) => x.type === "status" && x.state === "failed")).toBe(true), {
      timeout: 20_000,
    });
    expect(messages.filter((x) => x.type === "device_code")).toEqual([]);
    expect(JSON.stringify(messages)).not.toContain("phish.invalid");
    expect(as.deviceCodes).toHaveLength(1);
    // The operator's log says why, naming the two origins.
    expect(log.lines.join("\n")).toContain(
      `verification_uri_complete https://phish.invalid is not on the origin of ${originOf(as)}`,
    );
    expect((await app.store.loginSessions.get(m.sessionId))?.status).toBe("failed");
  });
});
