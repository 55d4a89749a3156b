// Device login with discovered endpoints (issue 15 part 2): a registry entry may name the
// authorization server's issuer instead of the endpoints; the device authorization and token
// endpoints are then read from its RFC 8414 metadata through the MCP SDK, and checked exactly as
// configured ones are (https, or http to loopback; the issuer must match). Against the fake
// authorization server on loopback, which serves the metadata (or a hostile variant).
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/clock/clock.js";
import { parseRegistry } from "../../src/config/registry.js";
import { startDeviceGrant } from "../../src/login/oauth/device.js";
import { type FakeDeviceAs, startFakeDeviceAs } from "../fixtures/device-as.js";

const CLIENT = "slaude-device";
let as: FakeDeviceAs | undefined;

afterEach(async () => {
  await as?.close();
  as = undefined;
});

const clock = new ManualClock(Date.UTC(2026, 0, 5, 9, 0, 0));
const start = (issuer: string) =>
  startDeviceGrant({ issuer, clientId: CLIENT, scopes: ["read"], allowedOrigins: [] }, { clock });

describe("device endpoints from the issuer's metadata", () => {
  it("discovers the device authorization and token endpoints and logs in through them", async () => {
    as = await startFakeDeviceAs({ clientId: CLIENT, now: () => clock.now(), intervalS: 1 });
    const grant = await start(as.url);
    expect(as.metadataRequests).toEqual(["/.well-known/oauth-authorization-server"]);
    expect(grant.verificationUri).toBe(`${as.url}/device`);
    expect(as.authorizations).toHaveLength(1);
    expect(await grant.poll()).toBe("pending");
    as.approve(grant.userCode);
    clock.advance(2_000);
    const r = await grant.poll();
    if (typeof r === "string" || r.tokens.kind !== "oauth")
      throw new Error(`not approved: ${typeof r === "string" ? r : r.tokens.kind}`);
    expect(r.tokens.accessToken).toBe(as.authorizations[0]!.accessToken);
    // A refresh goes to the discovered token endpoint.
    expect(r.tokens.client).toEqual({ tokenEndpoint: `${as.url}/token`, clientId: CLIENT });
  });

  it("refuses a discovered endpoint that is not https (or loopback http): nothing is sent to it", async () => {
    as = await startFakeDeviceAs({
      clientId: CLIENT,
      now: () => clock.now(),
      metadata: () => ({ device_authorization_endpoint: "http://device.example.com/device_authorization" }),
    });
    await expect(start(as.url)).rejects.toMatchObject({ code: "insecure_endpoint" });
    await as.close();
    as = await startFakeDeviceAs({
      clientId: CLIENT,
      now: () => clock.now(),
      metadata: () => ({ token_endpoint: "http://tokens.example.com/token" }),
    });
    await expect(start(as.url)).rejects.toMatchObject({ code: "insecure_endpoint" });
    expect(as.authorizations).toHaveLength(0);
  });

  it("refuses metadata naming another issuer, without a device endpoint, or without the device grant", async () => {
    for (const metadata of [
      () => ({ issuer: "https://evil.example.com" }),
      () => ({ device_authorization_endpoint: undefined }),
      () => ({ grant_types_supported: ["authorization_code"] }),
    ]) {
      as = await startFakeDeviceAs({ clientId: CLIENT, now: () => clock.now(), metadata });
      await expect(start(as.url)).rejects.toMatchObject({ code: "discovery_failed" });
      expect(as.authorizations).toHaveLength(0);
      await as.close();
      as = undefined;
    }
  });

  it("an issuer that publishes no metadata fails clearly", async () => {
    as = await startFakeDeviceAs({ clientId: CLIENT, now: () => clock.now() });
    await expect(start(`${as.url}/tenant`)).rejects.toMatchObject({ code: "discovery_failed" });
  });

  it("the registry takes an issuer or both endpoints, never neither nor both", () => {
    const doc = (device: Record<string, unknown>) => ({
      services: {
        svc: {
          transport: { type: "stdio", command: "true", credentialEnv: { TOKEN: "{{access_token}}" } },
          capture: { strategy: "device", device: { clientId: CLIENT, ...device } },
        },
      },
    });
    expect(() => parseRegistry(doc({ issuer: "https://idp.example.com" }), "t")).not.toThrow();
    expect(() =>
      parseRegistry(
        doc({ deviceAuthorizationEndpoint: "https://idp.example.com/d", tokenEndpoint: "https://idp.example.com/t" }),
        "t",
      ),
    ).not.toThrow();
    for (const bad of [
      {},
      { tokenEndpoint: "https://idp.example.com/t" },
      { issuer: "https://idp.example.com", tokenEndpoint: "https://idp.example.com/t" },
    ]) {
      expect(() => parseRegistry(doc(bad), "t")).toThrow(
        /issuer .* or both deviceAuthorizationEndpoint and tokenEndpoint/,
      );
    }
  });
});
