import { afterEach, describe, expect, it } from "vitest";
import type { AuditEventKind } from "../../../src/audit/event.js";
import { ManualClock } from "../../../src/clock/clock.js";
import { parseRegistry, type ServiceRegistry } from "../../../src/config/registry.js";
import { ConnectionLifecycle } from "../../../src/connections/lifecycle.js";
import { OAuthClientResolver } from "../../../src/login/oauth/client-resolver.js";
import { OAuthError } from "../../../src/login/oauth/errors.js";
import { type NeedsLoginNotifier, OAuthRefresher } from "../../../src/login/oauth/refresh-manager.js";
import { registerClient } from "../../../src/login/oauth/registration.js";
import { refresh } from "../../../src/login/oauth/token-client.js";
import type { Connection } from "../../../src/store/records.js";
import { bindingOf } from "../../../src/vault/binding.js";
import type { Credential } from "../../../src/vault/credential.js";
import { type FakeIdp, type IssuedTokens, startFakeIdp } from "../../fixtures/idp/fake-idp.js";
import { type Harness, harness, TempDirs } from "../../support/foundation.js";

const CLIENT_ID = "slaude-test";
const REDIRECT = "http://127.0.0.1:8080/login/oauth/callback";
const SKEW_MS = 60_000;

const tmp = new TempDirs();
let idp: FakeIdp | undefined;
afterEach(async () => {
  await idp?.close();
  idp = undefined;
  tmp.cleanup();
});

/** A registry whose services log in at the fake IdP: one with static endpoints, two found by discovery. */
function idpRegistry(i: FakeIdp): ServiceRegistry {
  const transport = { type: "http" as const, url: i.mcpUrl };
  return parseRegistry(
    {
      services: {
        remote: {
          transport,
          capture: {
            strategy: "oauth",
            authorizationUrl: i.authorizationEndpoint,
            tokenUrl: i.tokenEndpoint,
            clientId: CLIENT_ID,
          },
          scopes: ["thread", "user"],
          ttl: "8h",
        },
        discovered: {
          transport,
          capture: { strategy: "oauth", discovery: true, clientId: CLIENT_ID },
          scopes: ["user"],
          ttl: "8h",
        },
        dynamic: { transport, capture: { strategy: "oauth", discovery: true }, scopes: ["user"], ttl: "8h" },
      },
    },
    "idp-registry",
  );
}

class RecordingNotifier implements NeedsLoginNotifier {
  readonly calls: Connection[] = [];
  async needsLogin(connection: Connection): Promise<void> {
    this.calls.push(connection);
  }
}

interface Setup {
  h: Harness;
  idp: FakeIdp;
  lifecycle: ConnectionLifecycle;
  notifier: RecordingNotifier;
  refresher: OAuthRefresher;
}

async function setup(refresherOpts: Partial<ConstructorParameters<typeof OAuthRefresher>[0]> = {}): Promise<Setup> {
  idp = await startFakeIdp({ tokenDelayMs: 50, clients: [{ clientId: CLIENT_ID, redirectUris: [REDIRECT] }] });
  const h = harness(tmp);
  const registry = idpRegistry(idp);
  const lifecycle = new ConnectionLifecycle({ store: h.store, vault: h.vault, registry, clock: h.clock, log: h.log });
  const notifier = new RecordingNotifier();
  const refresher = new OAuthRefresher({
    store: h.store,
    vault: h.vault,
    registry,
    clock: h.clock,
    log: h.log,
    notifier,
    skewMs: SKEW_MS,
    ...refresherOpts,
  });
  return { h, idp, lifecycle, notifier, refresher };
}

async function connect(s: Setup, tokens: IssuedTokens, expiresInMs: number, service = "remote"): Promise<Connection> {
  return s.lifecycle.create({
    teamId: "T1",
    ownerUserId: "U1",
    service,
    scope: "user",
    credential: {
      kind: "oauth",
      accessToken: tokens.accessToken,
      refreshToken: tokens.refreshToken,
      expiresAt: s.h.clock.now() + expiresInMs,
      scope: "read write",
    },
    createdBy: "U1",
  });
}

async function storedCredential(s: Setup, id: string): Promise<Credential> {
  const row = await s.h.store.connections.get(id);
  return s.h.vault.openCredential(row!.sealed, bindingOf(row!));
}

async function auditOf(s: Setup, id: string, event: AuditEventKind) {
  const found = await s.h.store.audit.query({ connectionId: id, event });
  return found.map((r) => ({
    event: r.event,
    decision: r.decision ?? null,
    errorCode: r.errorCode ?? null,
    actor: r.actor ?? null,
  }));
}

async function settle<T>(ps: Array<Promise<T>>) {
  return Promise.allSettled(ps);
}

describe("OAuthRefresher.fresh", () => {
  it("refreshes a near-expiry connection exactly once for 20 concurrent callers, storing the rotated token first", async () => {
    const s = await setup();
    const old = s.idp.issueTokens("alice", CLIENT_ID);
    const c = await connect(s, old, 30_000);

    const results = await Promise.all(Array.from({ length: 20 }, () => s.refresher.fresh(c)));

    expect(s.idp.tokenRequests).toHaveLength(1);
    expect(s.idp.tokenRequests[0]).toMatchObject({
      grant_type: "refresh_token",
      refresh_token: old.refreshToken,
      client_id: CLIENT_ID,
    });
    const first = results[0]!;
    expect(first.kind).toBe("oauth");
    if (first.kind !== "oauth") return;
    expect(first.accessToken).not.toBe(old.accessToken);
    expect(s.idp.userOfAccessToken(first.accessToken)).toBe("alice");
    for (const r of results) expect(r).toEqual(first);
    expect(first.expiresAt).toBe(s.h.clock.now() + 3_600_000);

    // The row holds the new, rotated refresh token; the old one is dead at the IdP.
    const row = await storedCredential(s, c.id);
    expect(row).toEqual(first);
    expect(first.refreshToken).toBeTruthy();
    expect(first.refreshToken).not.toBe(old.refreshToken);
    await expect(
      refresh(
        { tokenEndpoint: s.idp.tokenEndpoint, clientId: CLIENT_ID, refreshToken: old.refreshToken },
        { clock: s.h.clock },
      ),
    ).rejects.toMatchObject({
      code: "invalid_grant",
    });
    expect(await auditOf(s, c.id, "connection_refreshed")).toEqual([
      { event: "connection_refreshed", decision: "rotated", errorCode: null, actor: "oauth-refresher" },
    ]);

    // A caller still holding the stale row object gets the stored tokens, with no second refresh.
    const again = await s.refresher.fresh(c);
    expect(again).toEqual(first);
    expect(s.idp.tokenRequests).toHaveLength(2); // the invalid_grant probe above
    expect(s.idp.tokenRequests.filter((r) => r.refresh_token === first.refreshToken)).toHaveLength(0);
  });

  it("does not refresh a connection whose token is not near expiry, until the clock gets there", async () => {
    const s = await setup();
    const tokens = s.idp.issueTokens("alice", CLIENT_ID);
    const c = await connect(s, tokens, 10 * 60_000);

    const cred = await s.refresher.fresh(c);
    expect(cred).toMatchObject({ kind: "oauth", accessToken: tokens.accessToken, refreshToken: tokens.refreshToken });
    expect(s.idp.tokenRequests).toHaveLength(0);

    s.h.clock.advance(10 * 60_000 - SKEW_MS - 1);
    await s.refresher.fresh(c);
    expect(s.idp.tokenRequests).toHaveLength(0);

    s.h.clock.advance(1);
    const renewed = await s.refresher.fresh(c);
    expect(s.idp.tokenRequests).toHaveLength(1);
    expect(renewed.kind === "oauth" && renewed.accessToken).not.toBe(tokens.accessToken);
  });

  it("open() hands back the row with its credential, the stored row after a refresh, so a caller decrypts nothing itself", async () => {
    const s = await setup();
    const tokens = s.idp.issueTokens("alice", CLIENT_ID);
    const c = await connect(s, tokens, 10 * 60_000);

    const current = await s.refresher.open(c);
    expect(current.connection).toEqual(await s.h.store.connections.get(c.id));
    expect(current.credential).toMatchObject({ kind: "oauth", accessToken: tokens.accessToken });
    expect(s.idp.tokenRequests).toHaveLength(0);

    s.h.clock.advance(10 * 60_000 - SKEW_MS);
    const renewed = await s.refresher.open(c);
    expect(s.idp.tokenRequests).toHaveLength(1);
    expect(renewed.connection).toEqual(await s.h.store.connections.get(c.id));
    expect(renewed.credential).toEqual(await storedCredential(s, c.id));
    expect(renewed.credential.kind === "oauth" && renewed.credential.accessToken).not.toBe(tokens.accessToken);
  });

  it("passes non-OAuth credentials and tokens without an expiry through untouched", async () => {
    const s = await setup();
    const pasted = await s.h.lifecycle.create({
      teamId: "T1",
      ownerUserId: "U1",
      service: "svc",
      scope: "user",
      credential: { kind: "fields", fields: { token: "pasted" } },
      createdBy: "U1",
    });
    expect(await s.refresher.fresh(pasted)).toEqual({ kind: "fields", fields: { token: "pasted" } });
    const forever = await s.lifecycle.create({
      teamId: "T1",
      ownerUserId: "U2",
      service: "remote",
      scope: "user",
      credential: { kind: "oauth", accessToken: "at-forever" },
      createdBy: "U2",
    });
    expect(await s.refresher.fresh(forever)).toMatchObject({ accessToken: "at-forever" });
    expect(s.idp.tokenRequests).toHaveLength(0);
  });

  it("marks a connection with a revoked refresh token needs_login once, for all concurrent callers", async () => {
    const s = await setup();
    const tokens = s.idp.issueTokens("alice", CLIENT_ID);
    const c = await connect(s, tokens, 30_000);
    expect(s.idp.revokeRefreshTokens("alice")).toBe(1);

    const results = await settle(Array.from({ length: 20 }, () => s.refresher.fresh(c)));

    expect(s.idp.tokenRequests).toHaveLength(1);
    for (const r of results) {
      expect(r.status).toBe("rejected");
      const reason = (r as PromiseRejectedResult).reason as unknown;
      expect(reason).toBeInstanceOf(OAuthError);
      expect((reason as OAuthError).code).toBe("needs_login");
    }
    expect(s.notifier.calls).toHaveLength(1);
    expect(s.notifier.calls[0]).toMatchObject({ id: c.id, status: "needs_login", ownerUserId: "U1" });
    expect((await s.h.store.connections.get(c.id))?.status).toBe("needs_login");
    expect(await auditOf(s, c.id, "connection_needs_login")).toEqual([
      {
        event: "connection_needs_login",
        decision: "invalid_grant",
        errorCode: "invalid_grant",
        actor: "oauth-refresher",
      },
    ]);

    // Later calls fail fast: no new token request, no second notification.
    await expect(s.refresher.fresh(c)).rejects.toMatchObject({ code: "needs_login" });
    expect(s.idp.tokenRequests).toHaveLength(1);
    expect(s.notifier.calls).toHaveLength(1);
  });

  it("never writes a token value into the logs", async () => {
    const s = await setup();
    const tokens = s.idp.issueTokens("alice", CLIENT_ID);
    const c = await connect(s, tokens, 30_000);
    const fresh = await s.refresher.fresh(c);
    s.idp.revokeRefreshTokens();
    s.h.clock.advance(3_600_000);
    await expect(s.refresher.fresh(c)).rejects.toMatchObject({ code: "needs_login" });
    const logs = s.h.log.lines.join("\n");
    expect(logs).toContain("oauth tokens refreshed");
    for (const secret of [
      tokens.accessToken,
      tokens.refreshToken,
      fresh.kind === "oauth" ? fresh.accessToken : "",
      fresh.kind === "oauth" ? fresh.refreshToken! : "",
    ]) {
      expect(secret).not.toBe("");
      expect(logs).not.toContain(secret);
    }
  });

  it("uses the unexpired token when the IdP is unreachable, and fails (without needs_login) once it has expired", async () => {
    const s = await setup({
      refreshFn: async () => {
        throw new OAuthError("network", "token refresh: could not reach the IdP");
      },
    });
    const tokens = s.idp.issueTokens("alice", CLIENT_ID);
    const c = await connect(s, tokens, 30_000);
    expect(await s.refresher.fresh(c)).toMatchObject({ accessToken: tokens.accessToken });
    s.h.clock.advance(30_000);
    await expect(s.refresher.fresh(c)).rejects.toMatchObject({ code: "network" });
    expect((await s.h.store.connections.get(c.id))?.status).toBe("active");
    expect(s.notifier.calls).toHaveLength(0);
  });

  it("drops the new tokens if the connection was revoked during the refresh", async () => {
    let id = "";
    const s = await setup({
      refreshFn: async (req) => {
        await setupRef.lifecycle.revoke(id, "U1");
        return refresh(req, { clock: setupRef.h.clock });
      },
    });
    const setupRef = s;
    const tokens = s.idp.issueTokens("alice", CLIENT_ID);
    const c = await connect(s, tokens, 30_000);
    id = c.id;
    await expect(s.refresher.fresh(c)).rejects.toMatchObject({ code: "connection_inactive" });
    expect((await s.h.store.connections.get(c.id))?.sealed).toBeNull();
    expect(await auditOf(s, c.id, "connection_refreshed")).toHaveLength(0);
  });

  it("refuses ended and TTL-expired connections without contacting the IdP", async () => {
    const s = await setup();
    const c = await connect(s, s.idp.issueTokens("alice", CLIENT_ID), 30_000);
    s.h.clock.advance(8 * 3_600_000);
    await expect(s.refresher.fresh(c)).rejects.toMatchObject({ code: "connection_inactive" });
    await s.lifecycle.revoke(c.id, "U1");
    await expect(s.refresher.fresh(c)).rejects.toMatchObject({ code: "connection_inactive" });
    expect(s.idp.tokenRequests).toHaveLength(0);
  });
});

describe("OAuthRefresher client resolution", () => {
  it("discovers the token endpoint for a discovery service with a pre-registered client id", async () => {
    const s = await setup();
    const c = await connect(s, s.idp.issueTokens("alice", CLIENT_ID), 30_000, "discovered");
    const cred = await s.refresher.fresh(c);
    expect(cred.kind === "oauth" && s.idp.userOfAccessToken(cred.accessToken)).toBe("alice");
    expect(s.idp.tokenRequests).toHaveLength(1);
    // RFC 8707: the refresh names the MCP server it is for.
    expect(s.idp.tokenRequests[0]).toMatchObject({ client_id: CLIENT_ID, resource: s.idp.mcpUrl });
    expect(s.idp.requests).toContain("GET /resource-metadata/mcp");
  });

  it("needs the dynamically registered client passed in for a service without a client id", async () => {
    const s = await setup();
    const dcr = await registerClient({ registrationEndpoint: s.idp.registrationEndpoint, redirectUris: [REDIRECT] });
    const c = await connect(s, s.idp.issueTokens("alice", dcr.clientId), 30_000, "dynamic");

    // Without it the refresh cannot happen; the still-valid token is served meanwhile...
    expect(await s.refresher.fresh(c)).toMatchObject({ kind: "oauth" });
    expect(s.idp.tokenRequests).toHaveLength(0);
    // ...and once expired the failure is a configuration error, not the user's login.
    s.h.clock.advance(30_000);
    await expect(s.refresher.fresh(c)).rejects.toMatchObject({ code: "client_unknown" });
    expect((await s.h.store.connections.get(c.id))?.status).toBe("active");

    const oauthClient = { tokenEndpoint: s.idp.tokenEndpoint, clientId: dcr.clientId, resource: s.idp.mcpUrl };
    const cred = await s.refresher.fresh(c, { oauthClient });
    expect(cred.kind === "oauth" && s.idp.userOfAccessToken(cred.accessToken)).toBe("alice");
    expect(s.idp.tokenRequests[0]).toMatchObject({ client_id: dcr.clientId, grant_type: "refresh_token" });
  });

  it("sends the client secret named by clientSecretEnv, and refuses when it is not set", async () => {
    idp = await startFakeIdp({
      clients: [{ clientId: "conf", clientSecret: "conf-secret", redirectUris: [REDIRECT] }],
    });
    const registry = parseRegistry(
      {
        services: {
          conf: {
            transport: { type: "http", url: idp.mcpUrl },
            capture: {
              strategy: "oauth",
              authorizationUrl: idp.authorizationEndpoint,
              tokenUrl: idp.tokenEndpoint,
              clientId: "conf",
              clientSecretEnv: "CONF_CLIENT_SECRET",
            },
            scopes: ["user"],
          },
        },
      },
      "conf-registry",
    );
    const service = registry.get("conf")!;
    await expect(new OAuthClientResolver().resolve(service)).rejects.toMatchObject({ code: "client_unknown" });
    const resolver = new OAuthClientResolver({
      secretOf: (name) => (name === "CONF_CLIENT_SECRET" ? "conf-secret" : undefined),
    });
    const client = await resolver.resolve(service);
    expect(client).toEqual({ tokenEndpoint: idp.tokenEndpoint, clientId: "conf", clientSecret: "conf-secret" });
    const t = idp.issueTokens("alice", "conf");
    const next = await refresh({ ...client, refreshToken: t.refreshToken }, { clock: new ManualClock(0) });
    expect(idp.userOfAccessToken(next.accessToken)).toBe("alice");
  });
});
