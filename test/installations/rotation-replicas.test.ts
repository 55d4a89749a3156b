// Token rotation with two replicas on one real PostgreSQL: Slack's rotating bot tokens live 12 hours
// and each refresh token works once, so a refresh must happen exactly once across replicas (the
// refresh lock, then a re-read of the row), and nobody may use the superseded token afterwards.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../src/clock/clock.js";
import { Installations, REFRESH_MARGIN_MS } from "../../src/installations/installations.js";
import { createLogger } from "../../src/log/logger.js";
import { SlackTokenRotation } from "../../src/slack/installation-adapters.js";
import { InstallationSlackApis } from "../../src/slack/tenant-api.js";
import type { PostgresStore } from "../../src/store/postgres/pg-store.js";
import { PostgresTopology } from "../../src/topology/postgres/postgres-topology.js";
import { KeyRing } from "../../src/vault/keyring.js";
import { Vault } from "../../src/vault/vault.js";
import { startFakeSlack } from "../fixtures/slack/fake-slack-api.js";
import { postgresStores } from "../support/postgres-stores.js";

const pg = postgresStores();
const TEAM = "T0ROTATE1";
const dist = { clientId: "1111.2222", clientSecret: "client-secret-rotation" };

function replica(store: PostgresStore, vault: Vault, clock: ManualClock, apiUrl: string): Installations {
  const options = { slackApiUrl: apiUrl, retryConfig: { retries: 0 } };
  return new Installations({
    repo: store.installations,
    sealer: { seal: (t, b) => vault.sealInstallation(t, b), open: (s, b) => vault.openInstallation(s, b) },
    clock,
    log: createLogger("error"),
    audit: store.audit,
    lock: new PostgresTopology(store.db).locks,
    rotation: new SlackTokenRotation(dist, options),
  });
}

describe("Slack token rotation across replicas", () => {
  it("two replicas due at once refresh once: one refresh token presented once, both use the new token, the old one never again", async () => {
    const clock = new ManualClock(Date.now());
    const fake = await startFakeSlack({
      now: () => clock.now(),
      teams: [{ id: TEAM, users: ["UROT00001"] }],
      oauth: { ...dist, tokenRotation: true, expiresInSeconds: 43_200 },
    });
    try {
      const given = fake.install({ tenant: { teamId: TEAM }, rotation: true, expiresInSeconds: 43_200 });
      const url = await pg.schema();
      const [s1, s2] = [await pg.store(url), await pg.store(url)];
      const vault = new Vault(KeyRing.fromBase64(randomBytes(32).toString("base64")));
      const [r1, r2] = [replica(s1, vault, clock, fake.apiUrl), replica(s2, vault, clock, fake.apiUrl)];
      await r1.record(
        {
          enterpriseId: null,
          enterpriseName: null,
          teamId: TEAM,
          teamName: "Rotate",
          isEnterpriseInstall: false,
          appId: fake.appId,
          botId: given.botId,
          botUserId: given.botUserId,
          scopes: ["chat:write"],
          tokens: { botToken: given.botToken, refreshToken: given.refreshToken! },
          tokenExpiresAt: clock.now() + 43_200_000,
          installedBy: "UROT00001",
        },
        "test",
      );
      // Before the margin nothing is refreshed.
      expect((await r1.tokenForTeam(TEAM)).botToken).toBe(given.botToken);
      clock.advance(43_200_000 - REFRESH_MARGIN_MS + 1_000);
      const [a, b] = await Promise.all([r1.tokenForTeam(TEAM), r2.tokenForTeam(TEAM)]);
      expect(a.botToken).not.toBe(given.botToken);
      expect(b.botToken).toBe(a.botToken);
      expect(fake.oauth.refreshCount(given.refreshToken!)).toBe(1);
      expect(fake.callsOf("oauth.v2.access")).toHaveLength(1);
      // Every Slack call after the refresh carries the new token (the API cache is keyed by the token).
      const apis = new InstallationSlackApis(r2, { slackApiUrl: fake.apiUrl, retryConfig: { retries: 0 } });
      await (await apis.forTeam(TEAM)).openDm("UROT00001");
      expect(fake.supersededUses()).toEqual([]);
      expect((await s2.audit.query({ event: "installation_token_refreshed" })).map((r) => r.teamId)).toEqual([TEAM]);
    } finally {
      await fake.close();
    }
  });

  it("a refresh Slack refuses disables the installation (refresh_failed) instead of serving a stale token", async () => {
    const clock = new ManualClock(Date.now());
    const fake = await startFakeSlack({
      now: () => clock.now(),
      teams: [{ id: TEAM, users: ["UROT00001"] }],
      oauth: { ...dist, tokenRotation: true },
    });
    try {
      const given = fake.install({ tenant: { teamId: TEAM }, rotation: true, expiresInSeconds: 43_200 });
      const store = await pg.store(await pg.schema());
      const vault = new Vault(KeyRing.fromBase64(randomBytes(32).toString("base64")));
      const r = replica(store, vault, clock, fake.apiUrl);
      await r.record(
        {
          enterpriseId: null,
          enterpriseName: null,
          teamId: TEAM,
          teamName: null,
          isEnterpriseInstall: false,
          appId: fake.appId,
          botId: given.botId,
          botUserId: given.botUserId,
          scopes: [],
          tokens: { botToken: given.botToken, refreshToken: "xoxe-1-spent-refresh-token" },
          tokenExpiresAt: clock.now() + 60_000,
          installedBy: null,
        },
        "test",
      );
      await expect(r.tokenForTeam(TEAM)).rejects.toMatchObject({ code: "refresh_failed" });
      const row = (await store.installations.list(10))[0]!;
      expect([row.status, row.statusReason]).toEqual(["disabled", "refresh_failed"]);
      await expect(r.tokenForTeam(TEAM)).rejects.toMatchObject({ code: "installation_disabled" });
    } finally {
      await fake.close();
    }
  });
});
