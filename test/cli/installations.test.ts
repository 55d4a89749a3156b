// `slaude-connect installations`: what an operator sees of the tenants (never a token), and the
// disable / enable / check commands, in-process against a real SQLite file and the fake Slack.
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/clock/clock.js";
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

async function setup() {
  const fake = await startFakeSlack({
    teams: [
      { id: "T0CLIAAA1", name: "Acme", users: ["UOP000001"] },
      { id: "T0CLIBBB1", name: "Beta", users: ["UOP000002"] },
    ],
  });
  fakes.push(fake);
  const a = fake.install({ tenant: { teamId: "T0CLIAAA1" }, scopes: ["chat:write"] });
  const b = fake.install({ tenant: { teamId: "T0CLIBBB1" } });
  const dir = tmp.make();
  const key = newKeyB64();
  const env: NodeJS.ProcessEnv = {
    SLAUDE_DATA_DIR: path.join(dir, "data"),
    SLAUDE_REGISTRY_PATH: writeRegistryFile(dir),
    SLAUDE_ENCRYPTION_KEY: key,
    SLACK_API_URL: fake.apiUrl,
    USER: "tester",
  };
  const clock = new ManualClock();
  const { store } = openSqliteStore(path.join(dir, "data", "slaude.db"));
  const vault = new Vault(KeyRing.fromBase64(key));
  const installations = new Installations({
    repo: store.installations,
    sealer: { seal: (t, bd) => vault.sealInstallation(t, bd), open: (s, bd) => vault.openInstallation(s, bd) },
    clock,
    log: createLogger("error"),
    audit: store.audit,
    lock: processRefreshLock,
  });
  const ids: string[] = [];
  for (const [team, name, inst] of [
    ["T0CLIAAA1", "Acme", a],
    ["T0CLIBBB1", "Beta", b],
  ] as const) {
    const row = await installations.record(
      {
        enterpriseId: null,
        enterpriseName: null,
        teamId: team,
        teamName: name,
        isEnterpriseInstall: false,
        appId: fake.appId,
        botId: inst.botId,
        botUserId: inst.botUserId,
        scopes: ["chat:write"],
        tokens: { botToken: inst.botToken },
        tokenExpiresAt: null,
        installedBy: "UOP000001",
      },
      "test",
    );
    ids.push(row.id);
  }
  await store.close();
  const cli = (args: string[]) => runInProcess(args, env, { clock });
  return { cli, ids, tokens: [a.botToken, b.botToken] };
}

describe("installations", () => {
  it("list shows each tenant with its name, status and scopes, never a token; --json is one object per line", async () => {
    const { cli, tokens } = await setup();
    const r = await cli(["installations", "list"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("T0CLIAAA1");
    expect(r.stdout).toContain("Beta");
    expect(r.stdout).toMatch(/active/);
    const json = await cli(["installations", "list", "--json"]);
    const rows = json.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(rows.map((x) => x.teamId).sort()).toEqual(["T0CLIAAA1", "T0CLIBBB1"]);
    for (const out of [r.stdout, json.stdout, r.stderr, json.stderr])
      for (const t of tokens) expect(out).not.toContain(t);
    expect(json.stdout).not.toMatch(/xox[bpe]-/);
    expect(rows.every((x) => !("sealed" in x))).toBe(true);
  });

  it("disable refuses the tenant until enable; both are audited; a second disable says there is nothing to do", async () => {
    const { cli, ids } = await setup();
    expect((await cli(["installations", "disable", ids[0]!])).stdout).toContain(`disabled ${ids[0]}`);
    const listed = await cli(["installations", "list", "--json"]);
    expect(listed.stdout).toContain('"status":"disabled"');
    const again = await cli(["installations", "disable", ids[0]!]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("no active installation");
    expect((await cli(["installations", "enable", ids[0]!])).code).toBe(0);
    const audit = await cli(["audit", "--jsonl"]);
    expect(audit.stdout).toContain('"installation_disabled"');
    expect(audit.stdout).toContain('"installation_enabled"');
  });

  it("check runs auth.test with each installation's own token and names the scopes it lacks", async () => {
    const { cli, ids } = await setup();
    const r = await cli(["installations", "check"]);
    // The fake grants A only chat:write: it lacks the rest the app needs, so check fails (exit 1) naming them.
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(new RegExp(`${ids[0]} T0CLIAAA1: ok \\(auth.test\\); missing scopes: `));
    const one = await cli(["installations", "check", "inst_unknown"]);
    expect(one.code).toBe(1);
    expect(one.stderr).toContain("no installation inst_unknown");
  });
});
