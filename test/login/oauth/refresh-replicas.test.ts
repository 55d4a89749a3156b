// OAuth refresh across replicas: two refreshers, each with its own store on one real PostgreSQL, ask
// for the same near-expiry connection at once. The fake IdP rotates refresh tokens (a spent one is
// invalid_grant), so a second refresh would end the connection: exactly one token request must reach
// it, and the other replica must use the tokens the first stored.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../../src/clock/clock.js";
import { parseRegistry, type ServiceRegistry } from "../../../src/config/registry.js";
import { ConnectionLifecycle } from "../../../src/connections/lifecycle.js";
import { memoryLogger } from "../../../src/log/logger.js";
import { OAuthRefresher } from "../../../src/login/oauth/refresh-manager.js";
import { openPostgresStore, type PostgresStore } from "../../../src/store/postgres/pg-store.js";
import { PostgresTopology } from "../../../src/topology/postgres/postgres-topology.js";
import { bindingOf } from "../../../src/vault/binding.js";
import { KeyRing } from "../../../src/vault/keyring.js";
import { Vault } from "../../../src/vault/vault.js";
import { type FakeIdp, startFakeIdp } from "../../fixtures/idp/fake-idp.js";
import { newKeyB64 } from "../../support/foundation.js";
import { type PgCluster, startPostgres } from "../../support/postgres.js";

const CLIENT_ID = "slaude-test";

let cluster: PgCluster;
let databaseUrl: string;
let idp: FakeIdp | undefined;
const stores: PostgresStore[] = [];
beforeAll(async () => {
  cluster = await startPostgres();
  databaseUrl = await cluster.createDatabase();
});
afterEach(async () => {
  await idp?.close();
  idp = undefined;
  for (const s of stores.splice(0)) await s.close();
});
afterAll(async () => {
  await cluster?.stop();
});

function registryOf(i: FakeIdp): ServiceRegistry {
  return parseRegistry(
    {
      services: {
        remote: {
          transport: { type: "http", url: i.mcpUrl },
          capture: {
            strategy: "oauth",
            authorizationUrl: i.authorizationEndpoint,
            tokenUrl: i.tokenEndpoint,
            clientId: CLIENT_ID,
          },
          scopes: ["user"],
          ttl: "8h",
        },
      },
    },
    "idp-registry",
  );
}

/** Two replicas' refreshers on one database (same key, same registry), and a near-expiry connection. */
async function twoReplicas(maxConnections?: number) {
  // The token endpoint answers slowly, so both replicas are inside a refresh at the same time.
  idp = await startFakeIdp({
    tokenDelayMs: 300,
    clients: [{ clientId: CLIENT_ID, redirectUris: ["http://127.0.0.1:8080/login/oauth/callback"] }],
  });
  const url = await cluster.createSchema(databaseUrl);
  const clock = new ManualClock();
  const vault = new Vault(KeyRing.fromBase64(newKeyB64()));
  const registry = registryOf(idp);
  const replicas = [];
  for (let i = 0; i < 2; i++) {
    const { store } = await openPostgresStore({ url, ...(maxConnections ? { maxConnections } : {}) }, () =>
      clock.now(),
    );
    stores.push(store);
    const log = memoryLogger();
    replicas.push({
      store,
      refresher: new OAuthRefresher({
        store,
        vault,
        registry,
        clock,
        log,
        notifier: { needsLogin: async () => {} },
        lock: new PostgresTopology(store.db).locks,
      }),
    });
  }
  const lifecycle = new ConnectionLifecycle({ store: replicas[0]!.store, vault, registry, clock, log: memoryLogger() });
  const connect = async (owner: string) => {
    const old = idp!.issueTokens("alice", CLIENT_ID);
    const conn = await lifecycle.create({
      teamId: "T1",
      ownerUserId: owner,
      service: "remote",
      scope: "user",
      credential: {
        kind: "oauth",
        accessToken: old.accessToken,
        refreshToken: old.refreshToken,
        expiresAt: clock.now() + 30_000,
        scope: "read",
      },
      createdBy: owner,
    });
    return { conn, old };
  };
  const { conn, old } = await connect("U1");
  return { idp, vault, replicas, conn, old, connect };
}

describe("OAuth refresh across replicas on PostgreSQL", () => {
  it("two replicas refreshing one connection at once send ONE token request; the second uses the stored tokens", async () => {
    const { idp, vault, replicas, conn, old } = await twoReplicas();
    const [a, b] = replicas as [(typeof replicas)[0], (typeof replicas)[0]];

    const [fromA, fromB] = await Promise.all([a.refresher.fresh(conn), b.refresher.fresh(conn)]);

    expect(idp.tokenRequests).toHaveLength(1);
    expect(idp.tokenRequests[0]).toMatchObject({ grant_type: "refresh_token", refresh_token: old.refreshToken });
    expect(fromA).toEqual(fromB);
    expect(fromA.kind === "oauth" && fromA.accessToken).not.toBe(old.accessToken);
    const row = await b.store.connections.get(conn.id);
    expect(row?.status).toBe("active");
    expect(vault.openCredential(row!.sealed, bindingOf(row!))).toEqual(fromA);
    const refreshed = await b.store.audit.query({ connectionId: conn.id, event: "connection_refreshed" });
    expect(refreshed.map((r) => r.decision)).toEqual(["rotated"]);
  });

  it("many callers on each replica at once still make one token request in all", async () => {
    const { idp, replicas, conn } = await twoReplicas();
    const all = await Promise.all(replicas.flatMap((r) => Array.from({ length: 8 }, () => r.refresher.fresh(conn))));
    expect(idp.tokenRequests).toHaveLength(1);
    for (const c of all) expect(c).toEqual(all[0]);
  });

  it("many connections refreshing at once on replicas with a 2-connection pool all succeed: the locks never starve the reads they guard", async () => {
    const { idp, replicas, conn, connect } = await twoReplicas(2);
    const conns = [
      conn,
      ...(await Promise.all(["U2", "U3", "U4", "U5", "U6"].map(async (u) => (await connect(u)).conn))),
    ];
    const all = await Promise.all(conns.flatMap((c) => replicas.map((r) => r.refresher.fresh(c))));
    expect(all).toHaveLength(12);
    // One token request per connection, whichever replica sent it.
    expect(idp.tokenRequests).toHaveLength(6);
  }, 90_000);
});
