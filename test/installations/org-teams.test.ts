// Which installation serves a team of an Enterprise Grid org: learned from events and from the
// org-wide install's auth.teams.list, which a team nobody serves must not trigger on every call.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/clock/clock.js";
import { Installations, MAX_ORG_TEAMS } from "../../src/installations/installations.js";
import { createLogger } from "../../src/log/logger.js";
import { processRefreshLock } from "../../src/login/oauth/refresh-lock.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { KeyRing } from "../../src/vault/keyring.js";
import { Vault } from "../../src/vault/vault.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function orgDeployment(
  teams: readonly string[] = ["T0GRID001", "T0GRID002"],
): Promise<{ installations: Installations; lists: string[]; clock: ManualClock }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-org-"));
  dirs.push(dir);
  const { store } = openSqliteStore(path.join(dir, "slaude.db"));
  const vault = new Vault(KeyRing.fromBase64(randomBytes(32).toString("base64")));
  const clock = new ManualClock(1_000_000);
  const lists: string[] = [];
  const installations = new Installations({
    repo: store.installations,
    sealer: { seal: (t, b) => vault.sealInstallation(t, b), open: (s, b) => vault.openInstallation(s, b) },
    clock,
    log: createLogger("error"),
    audit: store.audit,
    lock: processRefreshLock,
    orgTeams: {
      teamsOf: async (token) => {
        lists.push(token);
        return [...teams];
      },
    },
  });
  await installations.record(
    {
      enterpriseId: "E0ORG0001",
      enterpriseName: "Org",
      teamId: null,
      teamName: null,
      isEnterpriseInstall: true,
      appId: "A0APP0001",
      botId: "B0BOT0001",
      botUserId: "W0BOT0001",
      scopes: [],
      tokens: { botToken: "xoxb-org-canary" },
      tokenExpiresAt: null,
      installedBy: null,
    },
    "test",
  );
  return { installations, lists, clock };
}

describe("org-wide installations", () => {
  it("serve the org's workspaces, found through one auth.teams.list", async () => {
    const { installations, lists } = await orgDeployment();
    expect((await installations.forTeam("T0GRID002")).enterpriseId).toBe("E0ORG0001");
    expect((await installations.forTeam("T0GRID001")).enterpriseId).toBe("E0ORG0001");
    expect(lists).toEqual(["xoxb-org-canary"]);
    expect(await installations.sameInstallation("T0GRID001", "T0GRID002")).toBe(true);
  });

  it("a team no installation serves is refused, and naming made-up teams lists the org at most once a minute", async () => {
    const { installations, lists, clock } = await orgDeployment();
    for (let i = 0; i < 50; i++)
      await expect(installations.forTeam(`T0MADE${String(i).padStart(3, "0")}`)).rejects.toMatchObject({
        code: "unknown_installation",
      });
    expect(lists).toHaveLength(1);
    clock.advance(60_001);
    await expect(installations.forTeam("T0MADE999")).rejects.toMatchObject({ code: "unknown_installation" });
    expect(lists).toHaveLength(2);
  });

  it("an event of an org workspace teaches the map without any listing", async () => {
    const { installations, lists } = await orgDeployment();
    expect((await installations.resolve({ enterpriseId: "E0ORG0001", teamId: "T0GRID009" })).isEnterpriseInstall).toBe(
      true,
    );
    expect((await installations.forTeam("T0GRID009")).enterpriseId).toBe("E0ORG0001");
    expect(lists).toEqual([]);
  });

  it("remember at most MAX_ORG_TEAMS workspaces, forgetting the least recently used", async () => {
    const teams = Array.from({ length: MAX_ORG_TEAMS + 1 }, (_, i) => `T0G${String(i).padStart(7, "0")}`);
    const { installations, lists } = await orgDeployment(teams);
    const org = await installations.forTeam(teams.at(-1)!);
    expect(org.enterpriseId).toBe("E0ORG0001");
    const held = installations.teamsServedBy(org.id);
    expect(held).toHaveLength(MAX_ORG_TEAMS);
    expect(held).not.toContain(teams[0]);
    expect(held).toContain(teams[1]);
    expect(lists).toHaveLength(1);
  });
});
