import { afterEach, describe, expect, it } from "vitest";
import {
  authorizationServerMetadataUrls,
  discoverOAuth,
  fetchAuthorizationServer,
  fetchProtectedResource,
  protectedResourceMetadataUrls,
  resourceMetadataHint,
} from "../../../src/login/oauth/discovery.js";
import { CLIENT_NAME, registerClient } from "../../../src/login/oauth/registration.js";
import { type FakeIdp, startFakeIdp } from "../../fixtures/idp/fake-idp.js";
import { oauthError } from "./support.js";

let idp: FakeIdp | undefined;
afterEach(async () => {
  await idp?.close();
  idp = undefined;
});

describe("discovery helpers", () => {
  it("reads resource_metadata from WWW-Authenticate, quoted or not", () => {
    expect(
      resourceMetadataHint(
        'Bearer realm="x", resource_metadata="https://a.example/.well-known/oauth-protected-resource"',
      ),
    ).toBe("https://a.example/.well-known/oauth-protected-resource");
    expect(resourceMetadataHint("Bearer resource_metadata=https://a.example/m, error=invalid_token")).toBe(
      "https://a.example/m",
    );
    expect(resourceMetadataHint('Bearer realm="x"')).toBeUndefined();
    expect(resourceMetadataHint(null)).toBeUndefined();
  });

  it("inserts the well-known segment before the path (RFC 9728, RFC 8414)", () => {
    expect(protectedResourceMetadataUrls(new URL("https://mcp.example.com/v1/mcp/")).map(String)).toEqual([
      "https://mcp.example.com/.well-known/oauth-protected-resource/v1/mcp",
      "https://mcp.example.com/.well-known/oauth-protected-resource",
    ]);
    expect(authorizationServerMetadataUrls(new URL("https://auth.example.com")).map(String)).toEqual([
      "https://auth.example.com/.well-known/oauth-authorization-server",
      "https://auth.example.com/.well-known/openid-configuration",
    ]);
    expect(authorizationServerMetadataUrls(new URL("https://auth.example.com/tenant1")).map(String)).toEqual([
      "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
      "https://auth.example.com/.well-known/openid-configuration/tenant1",
      "https://auth.example.com/tenant1/.well-known/openid-configuration",
    ]);
  });

  it("refuses plain http to a non-loopback host before sending anything", async () => {
    expect((await oauthError(discoverOAuth("http://mcp.example.com/mcp"))).code).toBe("insecure_endpoint");
  });
});

describe("discoverOAuth against the fake IdP", () => {
  it("follows the 401 hint to the protected-resource metadata, then the AS metadata", async () => {
    idp = await startFakeIdp();
    const d = await discoverOAuth(idp.mcpUrl);
    expect(d).toEqual({
      issuer: idp.issuer,
      authorizationEndpoint: idp.authorizationEndpoint,
      tokenEndpoint: idp.tokenEndpoint,
      registrationEndpoint: idp.registrationEndpoint,
      scopesSupported: ["read", "write"],
      resource: idp.mcpUrl,
      resourceMetadataUrl: idp.resourceMetadataUrl,
    });
    expect(idp.requests.slice(0, 3)).toEqual([
      "POST /mcp",
      "GET /resource-metadata/mcp",
      "GET /.well-known/oauth-authorization-server",
    ]);
  });

  it("uses the RFC 9728 well-known URL when the 401 carries no hint", async () => {
    idp = await startFakeIdp();
    const base = idp.url;
    // A fetch that strips the hint, as a server without one would send.
    const noHint: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      if (res.status !== 401) return res;
      return new Response(await res.text(), { status: 401, headers: { "www-authenticate": 'Bearer realm="x"' } });
    };
    const d = await discoverOAuth(idp.mcpUrl, { fetch: noHint });
    expect(d.resourceMetadataUrl).toBe(`${base}/.well-known/oauth-protected-resource/mcp`);
    expect(d.tokenEndpoint).toBe(idp.tokenEndpoint);
  });

  it("falls back to openid-configuration when the RFC 8414 document is absent", async () => {
    idp = await startFakeIdp({ oauthMetadata: false });
    const d = await discoverOAuth(idp.mcpUrl);
    expect(d.tokenEndpoint).toBe(idp.tokenEndpoint);
    expect(idp.requests).toContain("GET /.well-known/openid-configuration");
  });

  it("treats a server without protected-resource metadata as its own authorization server", async () => {
    idp = await startFakeIdp({ protectedResourceWellKnown: false });
    const d = await discoverOAuth(`${idp.url}/other-mcp`);
    expect(d.resourceMetadataUrl).toBeUndefined();
    expect(d.resource).toBe(`${idp.url}/other-mcp`);
    expect(d.authorizationEndpoint).toBe(idp.authorizationEndpoint);
  });

  it("refuses metadata that describes a different resource (RFC 9728 §3.3)", async () => {
    idp = await startFakeIdp();
    const err = await oauthError(discoverOAuth(`${idp.url}/other-mcp`));
    expect(err.code).toBe("discovery_failed");
  });

  it("refuses AS metadata naming another issuer", async () => {
    idp = await startFakeIdp();
    const lying: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      if (!String(input).includes("oauth-authorization-server")) return res;
      const doc = (await res.json()) as Record<string, unknown>;
      return Response.json({ ...doc, issuer: "https://evil.example" });
    };
    expect((await oauthError(fetchAuthorizationServer(idp.issuer, { fetch: lying }))).code).toBe("discovery_failed");
  });

  it("reports an unreachable server as a network error", async () => {
    idp = await startFakeIdp();
    const url = idp.issuer;
    await idp.close();
    idp = undefined;
    expect((await oauthError(fetchAuthorizationServer(url))).code).toBe("network");
  });
});

describe("registerClient (RFC 7591)", () => {
  it("registers a public client for the code + refresh grants", async () => {
    idp = await startFakeIdp();
    const d = await discoverOAuth(idp.mcpUrl);
    const client = await registerClient({
      registrationEndpoint: d.registrationEndpoint!,
      redirectUris: ["http://127.0.0.1:8080/login/oauth/callback"],
    });
    expect(client.clientSecret).toBeUndefined();
    const stored = idp.registeredClients.get(client.clientId);
    expect(stored).toMatchObject({
      clientName: CLIENT_NAME,
      redirectUris: ["http://127.0.0.1:8080/login/oauth/callback"],
    });
    expect(stored?.clientSecret).toBeUndefined();
  });

  it("turns a refusal into registration_failed with the vendor's error code only", async () => {
    idp = await startFakeIdp();
    const err = await oauthError(
      registerClient({ registrationEndpoint: idp.registrationEndpoint, redirectUris: ["not a url"] }),
    );
    expect(err.code).toBe("registration_failed");
    expect(err.status).toBe(400);
    expect(err.vendorError).toBe("invalid_redirect_uri");
    expect(err.message).not.toContain("redirect_uris must be");
  });
});

describe("failures through the SDK carry no response text", () => {
  // The SDK's own errors can quote a body ("Raw body: ..."); ours name the step, a status and a vendor error token only.
  const CANARY = "canary-91d2-body-text";
  const answer =
    (status: number, body: string, type = "application/json"): typeof fetch =>
    async () =>
      new Response(body, { status, headers: { "content-type": type } });
  const clean = (err: { message: string; vendorError?: string | undefined }) => {
    expect(err.message).not.toContain(CANARY);
    expect(err.vendorError ?? "").not.toContain(CANARY);
    expect(JSON.stringify({ ...err, message: err.message })).not.toContain(CANARY);
  };

  it("maps malformed and failing metadata to coded errors", async () => {
    const cases: Array<[typeof fetch, string]> = [
      [answer(200, JSON.stringify({ issuer: "https://auth.example.com", note: CANARY })), "discovery_failed"],
      [answer(200, `not json ${CANARY}`, "text/plain"), "discovery_failed"],
      [answer(503, `<html>${CANARY}</html>`, "text/html"), "server_error"],
    ];
    for (const [f, code] of cases) {
      const err = await oauthError(fetchAuthorizationServer("https://auth.example.com", { fetch: f }));
      expect(err.code).toBe(code);
      clean(err);
    }
    const pr = await oauthError(
      fetchProtectedResource("https://mcp.example.com/mcp", {
        fetch: answer(200, JSON.stringify({ resource: CANARY })),
      }),
    );
    expect(pr.code).toBe("discovery_failed");
    clean(pr);
  });

  it("maps a refused or garbled registration to registration_failed", async () => {
    const req = {
      registrationEndpoint: "https://auth.example.com/register",
      redirectUris: ["https://broker.example.com/login/callback"],
    };
    const cases: Array<[typeof fetch, number]> = [
      [answer(400, JSON.stringify({ error: "invalid_client_metadata", error_description: CANARY })), 400],
      [answer(201, JSON.stringify({ client_name: CANARY })), 201],
      [answer(500, `<pre>${CANARY}</pre>`, "text/html"), 500],
    ];
    for (const [f, status] of cases) {
      const err = await oauthError(registerClient(req, { fetch: f }));
      expect(err.code).toBe("registration_failed");
      expect(err.status).toBe(status);
      clean(err);
    }
  });
});
