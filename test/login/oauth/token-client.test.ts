import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../../src/clock/clock.js";
import {
  type AuthorizationParams,
  beginAuthorization,
  randomState,
  readAuthorizationResponse,
} from "../../../src/login/oauth/authorize.js";
import { OAuthError } from "../../../src/login/oauth/errors.js";
import { registerClient } from "../../../src/login/oauth/registration.js";
import { exchangeCode, refresh } from "../../../src/login/oauth/token-client.js";
import { type FakeIdp, startFakeIdp } from "../../fixtures/idp/fake-idp.js";
import { oauthError, s256Challenge } from "./support.js";

const REDIRECT = "http://127.0.0.1:8080/login/oauth/callback";

let idp: FakeIdp | undefined;
afterEach(async () => {
  await idp?.close();
  idp = undefined;
});

/** Runs authorize → login form → code in the fake IdP; returns what the client needs to redeem it. */
async function authorize(i: FakeIdp, clientId: string, opts: { user?: string; password?: string } = {}) {
  const state = randomState();
  const { url, verifier } = await beginAuthorization({
    authorizationEndpoint: i.authorizationEndpoint,
    clientId,
    redirectUri: REDIRECT,
    scopes: ["read", "write"],
    state,
  });
  const pkce = { verifier };
  const location = await i.authorizeWithPassword(url, opts.user ?? "alice", opts.password ?? "alice-password");
  return { pkce, state, location, code: readAuthorizationResponse(location, { redirectUri: REDIRECT, state }) };
}

/** The URL and verifier of an authorization request (beginAuthorization, on the SDK's startAuthorization). */
async function buildAuthorizeUrl(p: AuthorizationParams) {
  const { url, verifier } = await beginAuthorization(p);
  return { url: new URL(url), verifier };
}

describe("beginAuthorization", () => {
  const base = { clientId: "cid", redirectUri: REDIRECT, scopes: ["a", "b"], state: "st" };

  it("sets every authorization-code + PKCE parameter and keeps the endpoint's own query", async () => {
    const { url, verifier } = await buildAuthorizeUrl({
      ...base,
      authorizationEndpoint: "https://auth.example.com/oauth/authorize?tenant=t1",
      resource: "https://mcp.example.com/mcp",
    });
    expect(Object.fromEntries(url.searchParams)).toEqual({
      tenant: "t1",
      response_type: "code",
      client_id: "cid",
      redirect_uri: REDIRECT,
      scope: "a b",
      state: "st",
      code_challenge: s256Challenge(verifier),
      code_challenge_method: "S256",
      resource: "https://mcp.example.com/mcp",
    });
  });

  it("lets registry extras add parameters but never override PKCE, state or the redirect", async () => {
    const { url } = await buildAuthorizeUrl({
      ...base,
      authorizationEndpoint: "https://auth.example.com/authorize",
      extra: {
        access_type: "offline",
        redirect_uri: "https://evil.example/cb",
        code_challenge_method: "plain",
        state: "x",
      },
    });
    expect(url.searchParams.get("access_type")).toBe("offline");
    expect(url.searchParams.get("redirect_uri")).toBe(REDIRECT);
    expect(url.searchParams.get("code_challenge_method")).toBe("S256");
    expect(url.searchParams.get("state")).toBe("st");
  });

  it("refuses an authorization endpoint over plain http to a remote host", async () => {
    await expect(
      buildAuthorizeUrl({ ...base, authorizationEndpoint: "http://auth.example.com/authorize" }),
    ).rejects.toThrow(OAuthError);
  });
});

describe("readAuthorizationResponse", () => {
  it("returns the code only for our redirect URI and state", () => {
    expect(readAuthorizationResponse(`${REDIRECT}?code=c1&state=s1`, { redirectUri: REDIRECT, state: "s1" })).toBe(
      "c1",
    );
    expect(() =>
      readAuthorizationResponse(`${REDIRECT}?code=c1&state=s2`, { redirectUri: REDIRECT, state: "s1" }),
    ).toThrow(expect.objectContaining({ code: "state_mismatch" }));
    expect(() => readAuthorizationResponse(`${REDIRECT}?code=c1`, { redirectUri: REDIRECT, state: "s1" })).toThrow(
      expect.objectContaining({ code: "state_mismatch" }),
    );
    expect(() =>
      readAuthorizationResponse(`https://evil.example/cb?code=c1&state=s1`, { redirectUri: REDIRECT, state: "s1" }),
    ).toThrow(expect.objectContaining({ code: "invalid_response" }));
    expect(() =>
      readAuthorizationResponse(`${REDIRECT}?error=access_denied&state=s1`, { redirectUri: REDIRECT, state: "s1" }),
    ).toThrow(expect.objectContaining({ code: "access_denied", vendorError: "access_denied" }));
  });
});

describe("code exchange against the fake IdP (no browser)", () => {
  it("logs in through the form, gets a code and redeems it with the verifier", async () => {
    idp = await startFakeIdp({ expiresIn: 3600 });
    const client = await registerClient({ registrationEndpoint: idp.registrationEndpoint, redirectUris: [REDIRECT] });
    const { pkce, code } = await authorize(idp, client.clientId);
    const clock = new ManualClock();
    const tokens = await exchangeCode(
      {
        tokenEndpoint: idp.tokenEndpoint,
        clientId: client.clientId,
        code,
        redirectUri: REDIRECT,
        verifier: pkce.verifier,
      },
      { clock },
    );
    expect(tokens).toMatchObject({
      kind: "oauth",
      tokenType: "Bearer",
      scope: "read write",
      expiresAt: clock.now() + 3_600_000,
    });
    expect(tokens.refreshToken).toBeTruthy();
    expect(idp.userOfAccessToken(tokens.accessToken)).toBe("alice");
    expect(idp.tokenRequests).toHaveLength(1);
    expect(idp.tokenRequests[0]).toMatchObject({
      grant_type: "authorization_code",
      client_id: client.clientId,
      client_auth: "none",
      code_verifier: pkce.verifier,
    });
    // The fake MCP endpoint accepts the token.
    const res = await fetch(idp.mcpUrl, { headers: { authorization: `Bearer ${tokens.accessToken}` } });
    expect(await res.json()).toEqual({ user: "alice" });
  });

  it("rejects a wrong verifier with invalid_grant, and the code cannot be replayed", async () => {
    idp = await startFakeIdp();
    const client = await registerClient({ registrationEndpoint: idp.registrationEndpoint, redirectUris: [REDIRECT] });
    const { pkce, code } = await authorize(idp, client.clientId);
    const req = { tokenEndpoint: idp.tokenEndpoint, clientId: client.clientId, code, redirectUri: REDIRECT };
    const clock = new ManualClock();
    const err = await oauthError(
      exchangeCode({ ...req, verifier: randomState() /* well-formed, not this flow's */ }, { clock }),
    );
    expect(err.code).toBe("invalid_grant");
    expect(err.status).toBe(400);
    expect(err.message).not.toContain(code);
    expect(err.message).not.toContain("PKCE verification failed");
    // A failed redemption burns the code.
    expect((await oauthError(exchangeCode({ ...req, verifier: pkce.verifier }, { clock }))).code).toBe("invalid_grant");
  });

  it("refuses an authorize request without S256 before showing a login form", async () => {
    idp = await startFakeIdp({ clients: [{ clientId: "c", redirectUris: [REDIRECT] }] });
    const res = await fetch(
      idp.authorizeUrl({ clientId: "c", redirectUri: REDIRECT, state: "s", challenge: "x", method: "plain" }),
      { redirect: "manual" },
    );
    expect(res.status).toBe(302);
    expect(new URL(res.headers.get("location")!).searchParams.get("error")).toBe("invalid_request");
    const unknown = await fetch(
      idp.authorizeUrl({ clientId: "c", redirectUri: "https://evil.example/cb", state: "s", challenge: "x" }),
      { redirect: "manual" },
    );
    expect(unknown.status).toBe(400);
  });

  it("authenticates a confidential client with HTTP Basic", async () => {
    idp = await startFakeIdp({
      clients: [{ clientId: "conf id", clientSecret: "s3cret:+/", redirectUris: [REDIRECT] }],
    });
    const { pkce, code } = await authorize(idp, "conf id");
    const tokens = await exchangeCode(
      {
        tokenEndpoint: idp.tokenEndpoint,
        clientId: "conf id",
        clientSecret: "s3cret:+/",
        code,
        redirectUri: REDIRECT,
        verifier: pkce.verifier,
      },
      { clock: new ManualClock() },
    );
    expect(tokens.accessToken).toBeTruthy();
    expect(idp.tokenRequests[0]).toMatchObject({ client_auth: "client_secret_basic", client_id: "conf id" });
    expect(idp.tokenRequests[0]?.client_secret).toBeUndefined();
  });
});

describe("refresh", () => {
  it("rotates: each use returns a new refresh token and the old one is then rejected", async () => {
    idp = await startFakeIdp({ clients: [{ clientId: "c", redirectUris: [REDIRECT] }], expiresIn: 120 });
    const first = idp.issueTokens("alice", "c");
    const clock = new ManualClock();
    const req = { tokenEndpoint: idp.tokenEndpoint, clientId: "c" };
    const second = await refresh({ ...req, refreshToken: first.refreshToken }, { clock });
    expect(second.refreshToken).toBeTruthy();
    expect(second.refreshToken).not.toBe(first.refreshToken);
    expect(second.expiresAt).toBe(clock.now() + 120_000);
    const reused = await oauthError(refresh({ ...req, refreshToken: first.refreshToken }, { clock }));
    expect(reused.code).toBe("invalid_grant");
    expect(reused.message).not.toContain(first.refreshToken);
    const third = await refresh({ ...req, refreshToken: second.refreshToken! }, { clock });
    expect(third.refreshToken).not.toBe(second.refreshToken);
    expect(idp.tokenRequests.map((r) => r.grant_type)).toEqual(["refresh_token", "refresh_token", "refresh_token"]);
  });

  it("keeps the old refresh token (and scope) when the server does not send new ones", async () => {
    idp = await startFakeIdp({ clients: [{ clientId: "c", redirectUris: [REDIRECT] }] });
    idp.settings.rotateRefreshTokens = false;
    const first = idp.issueTokens("alice", "c");
    const next = await refresh(
      { tokenEndpoint: idp.tokenEndpoint, clientId: "c", refreshToken: first.refreshToken, scope: "read write" },
      { clock: new ManualClock() },
    );
    expect(next.refreshToken).toBe(first.refreshToken);
    expect(next.accessToken).not.toBe(first.accessToken);
  });

  it("reports network, server and malformed failures without any body or token text", async () => {
    const CANARY = "canary-7f3e-secret-body";
    const clock = new ManualClock();
    const req = { tokenEndpoint: "https://auth.example.com/token", clientId: "c", refreshToken: `rt-${CANARY}` };
    const answer =
      (status: number, body: string, type = "application/json"): typeof fetch =>
      async () =>
        new Response(body, { status, headers: { "content-type": type } });

    const cases: Array<[typeof fetch, string]> = [
      [answer(500, JSON.stringify({ error: "server_error", error_description: CANARY })), "server_error"],
      [answer(503, `<html>${CANARY}</html>`, "text/html"), "server_error"],
      [answer(400, JSON.stringify({ error: "invalid_grant", error_description: CANARY })), "invalid_grant"],
      [answer(200, JSON.stringify({ error: "invalid_grant", error_description: CANARY })), "invalid_grant"],
      [answer(401, JSON.stringify({ error: "invalid_client", error_description: CANARY })), "invalid_client"],
      [answer(200, JSON.stringify({ token: CANARY })), "invalid_response"],
      [answer(400, JSON.stringify({ error: `${CANARY} with spaces`, error_description: CANARY })), "invalid_request"],
      [
        async () => {
          throw new TypeError("fetch failed");
        },
        "network",
      ],
    ];
    for (const [f, code] of cases) {
      const err = await oauthError(refresh(req, { clock, fetch: f }));
      expect(err.code).toBe(code);
      expect(err.message).not.toContain(CANARY);
      expect(err.vendorError ?? "").not.toContain(CANARY);
      expect(JSON.stringify({ ...err, message: err.message })).not.toContain(CANARY);
    }
  });

  it("reads a form-encoded success body and a lowercase bearer type", async () => {
    const f: typeof fetch = async () =>
      new Response("access_token=at1&token_type=bearer&expires_in=60&refresh_token=rt2", {
        status: 200,
        headers: { "content-type": "application/x-www-form-urlencoded" },
      });
    const clock = new ManualClock();
    const t = await refresh(
      { tokenEndpoint: "https://auth.example.com/token", clientId: "c", refreshToken: "rt1" },
      { clock, fetch: f },
    );
    expect(t).toEqual({
      kind: "oauth",
      accessToken: "at1",
      tokenType: "Bearer",
      refreshToken: "rt2",
      expiresAt: clock.now() + 60_000,
    });
  });
});
