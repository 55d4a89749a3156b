// `connections login` for a Slack team: the user must exist in that team now (users.info with the
// token of the installation serving it, against the fake Slack Web API); a made-up, deactivated
// or bot user, or a team no installation serves, gets no link (exit 1, nothing minted).
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/clock/clock.js";
import { demoRegistryDoc } from "../../src/config/demo-registry.js";
import { Installations } from "../../src/installations/installations.js";
import { createLogger } from "../../src/log/logger.js";
import { processRefreshLock } from "../../src/login/oauth/refresh-lock.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { KeyRing } from "../../src/vault/keyring.js";
import { Vault } from "../../src/vault/vault.js";
import { type FakeSlack, startFakeSlack } from "../fixtures/slack/fake-slack-api.js";
import { newKeyB64, TempDirs, writeRegistryFile } from "../support/foundation.js";
import { runInProcess } from "./run.js";

const tmp = new TempDirs();
const fakes: FakeSlack[] = [];
afterEach(async () => {
  for (const f of fakes.splice(0)) await f.close();
  tmp.cleanup();
});

const TEAM = "T0LOGIN01";

async function setup() {
  const fake = await startFakeSlack({
    teams: [{ id: TEAM, name: "Acme", users: ["UREAL0001", { id: "UGONE0001", deleted: true }] }],
  });
  fakes.push(fake);
  const inst = fake.install({ tenant: { teamId: TEAM }, scopes: ["users:read"] });
  const dir = tmp.make();
  const key = newKeyB64();
  const dbPath = path.join(dir, "data", "slaude.db");
  const env: NodeJS.ProcessEnv = {
    NODE_ENV: "test",
    SLAUDE_DATA_DIR: path.join(dir, "data"),
    SLAUDE_REGISTRY_PATH: writeRegistryFile(dir, demoRegistryDoc()),
    SLAUDE_ENCRYPTION_KEY: key,
    SLACK_API_URL: fake.apiUrl,
  };
  const clock = new ManualClock();
  const { store } = openSqliteStore(dbPath);
  const vault = new Vault(KeyRing.fromBase64(key));
  const installations = new Installations({
    repo: store.installations,
    sealer: { seal: (t, b) => vault.sealInstallation(t, b), open: (s, b) => vault.openInstallation(s, b) },
    clock,
    log: createLogger("error"),
    audit: store.audit,
    lock: processRefreshLock,
  });
  await installations.record(
    {
      enterpriseId: null,
      enterpriseName: null,
      teamId: TEAM,
      teamName: "Acme",
      isEnterpriseInstall: false,
      appId: fake.appId,
      botId: inst.botId,
      botUserId: inst.botUserId,
      scopes: ["users:read"],
      tokens: { botToken: inst.botToken },
      tokenExpiresAt: null,
      installedBy: "UREAL0001",
    },
    "test",
  );
  await store.close();
  /** The login_started rows and the sessions a far-future expiry would end: what was minted. */
  const minted = async () => {
    const { store: s } = openSqliteStore(dbPath);
    try {
      return {
        audit: (await s.audit.query({ event: "login_started" })).map((e) => e.callerUserId),
        sessions: (await s.loginSessions.expireDue(Number.MAX_SAFE_INTEGER)).map((x) => x.userId),
      };
    } finally {
      await s.close();
    }
  };
  const login = (team: string, user: string) =>
    runInProcess(
      [
        "connections",
        "login",
        "--team",
        team,
        "--user",
        user,
        "--service",
        "demo",
        "--thread",
        "C0GENERAL/1700000000.000100",
      ],
      env,
      { clock },
    );
  return { login, minted, botUserId: inst.botUserId };
}

describe("connections login in a Slack team", () => {
  it("refuses a user Slack does not know, a deactivated one, a bot and a team no installation serves; mints for a real member", async () => {
    const { login, minted, botUserId } = await setup();
    const cases: [string, string, string][] = [
      [TEAM, "UNOBODY", `unknown user "UNOBODY" in team ${TEAM} (Slack: user_not_found); no link minted`],
      [TEAM, "UGONE0001", `user "UGONE0001" is deactivated in team ${TEAM}; no link minted`],
      [TEAM, botUserId, `user "${botUserId}" is a bot in team ${TEAM}, not a person who can sign in; no link minted`],
      ["T0NOBODY1", "UREAL0001", "no active installation serves team T0NOBODY1 (unknown_installation)"],
    ];
    for (const [team, user, message] of cases) {
      const r = await login(team, user);
      expect(r.code, `${team} ${user}: ${r.stderr}`).toBe(1);
      expect(r.stdout).toBe("");
      expect(r.stderr).toContain(message);
    }
    expect(await minted()).toEqual({ audit: [], sessions: [] });

    const ok = await login(TEAM, "UREAL0001");
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/\/login\/l\/[A-Za-z0-9_-]{43}\n$/);
    expect(await minted()).toEqual({ audit: ["UREAL0001"], sessions: ["UREAL0001"] });
  });
});
