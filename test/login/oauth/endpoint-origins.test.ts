// Issue 21, finding 1, for the authorization-code side: a hostile https authorization server (or
// MCP server) whose metadata points the broker at a plain-http loopback service or at another
// origin. Real https fakes on loopback (a throwaway certificate, trusted by the fetch the broker is
// given), real discovery through the MCP SDK, real refreshes from a SQLite vault; each fake counts
// the requests it got, so "nothing was sent there" is checked at the place that would have received it.
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../../src/clock/clock.js";
import { parseRegistry, type Service } from "../../../src/config/registry.js";
import { ConnectionLifecycle } from "../../../src/connections/lifecycle.js";
import { discoverOAuth } from "../../../src/login/oauth/discovery.js";
import { oauthFlows } from "../../../src/login/oauth/flow.js";
import { OAuthRefresher } from "../../../src/login/oauth/refresh-manager.js";
import { refresh } from "../../../src/login/oauth/token-client.js";
import type { LoginSession } from "../../../src/store/records.js";
import { type FakeIdp, type FakeIdpOptions, startFakeIdp } from "../../fixtures/idp/fake-idp.js";
import { harness, TempDirs } from "../../support/foundation.js";
import { testCert, trustingFetch } from "../../support/tls.js";
import { oauthError } from "./support.js";

const open: FakeIdp[] = [];
const tmp = new TempDirs();
afterEach(async () => {
  await Promise.all(open.splice(0).map((i) => i.close()));
  tmp.cleanup();
});

async function idp(o: FakeIdpOptions = {}): Promise<FakeIdp> {
  const i = await startFakeIdp(o);
  open.push(i);
  return i;
}
const tlsIdp = (o: FakeIdpOptions = {}) => idp({ ...o, tls: testCert() });
const tls = { fetch: trustingFetch(testCert().cert) };

function service(url: string, capture: Record<string, unknown>): Service {
  return parseRegistry(
    {
      services: {
        svc: {
          transport: { type: "http", url },
          capture: { strategy: "oauth", discovery: true, ...capture },
          scopes: ["user"],
        },
      },
    },
    "t",
  ).get("svc")!;
}
const SESSION: LoginSession = {
  id: "ls1",
  tokenHash: "h",
  teamId: "T1",
  userId: "U1",
  service: "svc",
  scope: "user",
  channelId: null,
  threadTs: null,
  status: "opened",
  createdAt: 0,
  expiresAt: 1,
  openedAt: 0,
  endedAt: null,
  connectionId: null,
  viewerHash: null,
};

describe("discovered authorization-code endpoints", () => {
  it("an https server's metadata naming a loopback http endpoint is refused, and nothing reaches it", async () => {
    const internal = await idp();
    for (const field of ["token_endpoint", "authorization_endpoint", "registration_endpoint"]) {
      const as = await tlsIdp({ metadata: () => ({ [field]: `${internal.url}/internal/admin/${field}` }) });
      const err = await oauthError(discoverOAuth(as.mcpUrl, tls));
      expect(err.code).toBe("insecure_endpoint");
      expect(err.message).toContain(field);
      expect(err.message).toContain("must use https");
      // The whole login refuses too, before registering anywhere.
      expect(
        (
          await oauthError(
            oauthFlows({
              publicUrl: "https://broker.example.com",
              clock: new ManualClock(),
              secretOf: () => undefined,
              http: tls,
            })(service(as.mcpUrl, {}), SESSION),
          )
        ).code,
      ).toBe("insecure_endpoint");
      expect(as.registeredClients.size).toBe(0);
    }
    expect(internal.requests).toEqual([]);
  });

  it("a protected resource naming a loopback http authorization server or metadata hint is refused", async () => {
    const internal = await idp();
    const mcp = await tlsIdp({ resourceMetadata: () => ({ authorization_servers: [internal.url] }) });
    const err = await oauthError(discoverOAuth(mcp.mcpUrl, tls));
    expect(err).toMatchObject({ code: "insecure_endpoint" });
    expect(err.message).toContain("authorization server");
    // The 401's resource_metadata hint is a discovered URL too.
    const hinting = await tlsIdp({ resourceMetadataHint: () => `${internal.url}/internal/admin/metadata` });
    const hinted = await oauthError(discoverOAuth(hinting.mcpUrl, tls));
    expect(hinted.code).toBe("insecure_endpoint");
    expect(hinted.message).toContain("resource_metadata URL");
    expect(internal.requests).toEqual([]);
  });

  it("an endpoint on another origin (a sibling host, another port) is refused unless the registry allows that origin", async () => {
    const other = await tlsIdp();
    const as = await tlsIdp({ metadata: () => ({ token_endpoint: other.tokenEndpoint }) });
    const err = await oauthError(discoverOAuth(as.mcpUrl, tls));
    expect(err.code).toBe("insecure_endpoint");
    expect(err.message).toContain(new URL(other.url).origin);
    expect(err.message).toContain("allowedOrigins");
    const allowed = await discoverOAuth(as.mcpUrl, { ...tls, allowedOrigins: [new URL(other.url).origin] });
    expect(allowed.tokenEndpoint).toBe(other.tokenEndpoint);
    expect(allowed.authorizationEndpoint).toBe(as.authorizationEndpoint);
    // The registry field is what the login reads.
    const flow = await oauthFlows({
      publicUrl: "https://broker.example.com",
      clock: new ManualClock(),
      secretOf: () => undefined,
      http: tls,
    })(service(as.mcpUrl, { allowedOrigins: [new URL(other.url).origin] }), SESSION);
    expect(new URL(flow.authorizeUrl).origin).toBe(new URL(as.url).origin);
    expect(other.requests).toEqual([]);
  });

  it("an authorization server on another origin than the MCP server needs the registry's consent", async () => {
    const auth = await tlsIdp();
    const mcp = await tlsIdp({ resourceMetadata: () => ({ authorization_servers: [auth.issuer] }) });
    expect((await oauthError(discoverOAuth(mcp.mcpUrl, tls))).code).toBe("insecure_endpoint");
    expect(auth.requests).toEqual([]);
    const d = await discoverOAuth(mcp.mcpUrl, { ...tls, allowedOrigins: [new URL(auth.url).origin] });
    expect(d).toMatchObject({ issuer: auth.issuer, tokenEndpoint: auth.tokenEndpoint, resource: mcp.mcpUrl });
  });

  it("same-origin https discovery keeps working", async () => {
    const as = await tlsIdp();
    expect(await discoverOAuth(as.mcpUrl, tls)).toMatchObject({
      issuer: as.issuer,
      tokenEndpoint: as.tokenEndpoint,
      registrationEndpoint: as.registrationEndpoint,
    });
  });
});

describe("production refuses plain http, loopback included", () => {
  it("discovery, token requests and refreshes to a loopback http server are refused before any request", async () => {
    const local = await idp({
      clients: [{ clientId: "c", redirectUris: ["https://broker.example.com/login/callback"] }],
    });
    expect((await oauthError(discoverOAuth(local.mcpUrl, { production: true }))).code).toBe("insecure_endpoint");
    const t = local.issueTokens("alice", "c");
    const err = await oauthError(
      refresh(
        { tokenEndpoint: local.tokenEndpoint, clientId: "c", refreshToken: t.refreshToken },
        { clock: new ManualClock(), production: true },
      ),
    );
    expect(err.code).toBe("insecure_endpoint");
    expect(err.message).toContain("NODE_ENV=production");
    expect(local.requests).toEqual([]);
    // The same server is fine in development (the fixtures rely on that).
    await discoverOAuth(local.mcpUrl, {});
  });
});

describe("a stored token endpoint is held to the registry at every refresh", () => {
  /** A connection whose stored token endpoint is on a second server; `allow` says whether the registry lists that origin. */
  async function setup(allow: boolean) {
    const mcp = await idp({ clients: [{ clientId: "c", redirectUris: ["x:"] }] });
    const foreign = await idp({ clients: [{ clientId: "c", redirectUris: ["x:"] }] });
    const allowed = allow ? { allowedOrigins: [new URL(foreign.url).origin] } : {};
    const h = harness(tmp);
    const registry = parseRegistry(
      {
        services: {
          svc: {
            transport: { type: "http", url: mcp.mcpUrl },
            capture: { strategy: "oauth", discovery: true, ...allowed },
            scopes: ["user"],
          },
        },
      },
      "t",
    );
    const lifecycle = new ConnectionLifecycle({ store: h.store, vault: h.vault, registry, clock: h.clock, log: h.log });
    const refresher = new OAuthRefresher({
      store: h.store,
      vault: h.vault,
      registry,
      clock: h.clock,
      log: h.log,
      notifier: { needsLogin: async () => {} },
    });
    const t = foreign.issueTokens("alice", "c");
    // A credential stored with a token endpoint on another origin (say, before this rule existed).
    const c = await lifecycle.create({
      teamId: "T1",
      ownerUserId: "U1",
      service: "svc",
      scope: "user",
      credential: {
        kind: "oauth",
        accessToken: t.accessToken,
        refreshToken: t.refreshToken,
        expiresAt: h.clock.now() + 1000,
        client: { tokenEndpoint: foreign.tokenEndpoint, clientId: "c" },
      },
      createdBy: "U1",
    });
    h.clock.advance(2000);
    return { mcp, foreign, refresher, c };
  }

  it("refuses to send the refresh token to an origin the registry entry does not name", async () => {
    const { mcp, foreign, refresher, c } = await setup(false);
    const err = await oauthError(refresher.fresh(c));
    expect(err.code).toBe("insecure_endpoint");
    expect(err.message).toContain(new URL(foreign.url).origin);
    expect(foreign.tokenRequests).toEqual([]);
    expect(mcp.tokenRequests).toEqual([]);
  });

  it("refreshes there once the registry allows that origin", async () => {
    const { foreign, refresher, c } = await setup(true);
    const cred = await refresher.fresh(c);
    expect(cred.kind === "oauth" && foreign.userOfAccessToken(cred.accessToken)).toBe("alice");
    expect(foreign.tokenRequests).toHaveLength(1);
  });
});
