// The OAuth capture strategy (src/login/oauth/flow.ts) against the fake IdP, without a browser: the
// authorize URL it opens, the redirect it accepts and the credential it returns.
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../../src/clock/clock.js";
import { parseRegistry, type Service } from "../../../src/config/registry.js";
import { oauthFlows, oauthRedirectUri } from "../../../src/login/oauth/flow.js";
import type { LoginSession } from "../../../src/store/records.js";
import { type FakeIdp, startFakeIdp } from "../../fixtures/idp/fake-idp.js";
import { oauthError } from "./support.js";

const PUBLIC_URL = "http://127.0.0.1:8080";
const REDIRECT = oauthRedirectUri(PUBLIC_URL);
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

let idp: FakeIdp | undefined;
afterEach(async () => {
  await idp?.close();
  idp = undefined;
});

function service(capture: Record<string, unknown>, url: string): Service {
  return parseRegistry(
    {
      services: {
        svc: { transport: { type: "http", url }, capture: { strategy: "oauth", ...capture }, scopes: ["user"] },
      },
    },
    "flow-test",
  ).get("svc")!;
}

describe("oauthFlows", () => {
  it("discovers the server, registers a client, and returns tokens that carry that client", async () => {
    idp = await startFakeIdp();
    const clock = new ManualClock();
    const flow = await oauthFlows({ publicUrl: PUBLIC_URL, clock, secretOf: () => undefined })(
      service({ discovery: true, scopes: ["read"] }, idp.mcpUrl),
      SESSION,
    );

    expect(flow.redirectPrefix).toBe(REDIRECT);
    const q = new URL(flow.authorizeUrl).searchParams;
    const clientId = q.get("client_id")!;
    expect(idp.registeredClients.get(clientId)).toMatchObject({ redirectUris: [REDIRECT] });
    expect(Object.fromEntries(q)).toMatchObject({
      response_type: "code",
      redirect_uri: REDIRECT,
      scope: "read",
      code_challenge_method: "S256",
      resource: idp.mcpUrl,
    });

    const location = await idp.authorizeWithPassword(flow.authorizeUrl, "alice", "alice-password");
    expect((await oauthError(flow.complete(location.replace(/state=[^&]+/, "state=forged")))).code).toBe(
      "state_mismatch",
    );
    const cred = await flow.complete(location);
    expect(cred).toMatchObject({
      kind: "oauth",
      tokenType: "Bearer",
      client: { tokenEndpoint: idp.tokenEndpoint, clientId, resource: idp.mcpUrl },
    });
    expect(cred.kind === "oauth" && idp.userOfAccessToken(cred.accessToken)).toBe("alice");
    expect(idp.tokenRequests).toHaveLength(1);
    expect(idp.tokenRequests[0]).toMatchObject({
      grant_type: "authorization_code",
      client_id: clientId,
      client_auth: "none",
      resource: idp.mcpUrl,
    });
    // The code is spent: a replayed redirect is refused by the IdP.
    expect((await oauthError(flow.complete(location))).code).toBe("invalid_grant");
  });

  it("reads a static client's secret by its variable name, refuses when it is unset, and authenticates with it", async () => {
    idp = await startFakeIdp({
      clients: [{ clientId: "conf", clientSecret: "conf-secret", redirectUris: [REDIRECT] }],
    });
    const svc = service(
      {
        authorizationUrl: idp.authorizationEndpoint,
        tokenUrl: idp.tokenEndpoint,
        clientId: "conf",
        clientSecretEnv: "CONF_SECRET",
      },
      idp.mcpUrl,
    );
    const unset = await oauthError(
      oauthFlows({ publicUrl: PUBLIC_URL, clock: new ManualClock(), secretOf: () => undefined })(svc, SESSION),
    );
    expect(unset.code).toBe("client_unknown");
    expect(unset.message).toContain("CONF_SECRET");

    const flow = await oauthFlows({
      publicUrl: PUBLIC_URL,
      clock: new ManualClock(),
      secretOf: (n) => (n === "CONF_SECRET" ? "conf-secret" : undefined),
    })(svc, SESSION);
    expect(flow.authorizeUrl.startsWith(`${idp.authorizationEndpoint}?`)).toBe(true);
    const cred = await flow.complete(await idp.authorizeWithPassword(flow.authorizeUrl, "alice", "alice-password"));
    expect(cred.kind === "oauth" && idp.userOfAccessToken(cred.accessToken)).toBe("alice");
    expect(cred).not.toHaveProperty("client");
    expect(idp.tokenRequests[0]).toMatchObject({ client_auth: "client_secret_basic", client_id: "conf" });
    expect(idp.tokenRequests[0]?.client_secret).toBeUndefined();
  });
});
