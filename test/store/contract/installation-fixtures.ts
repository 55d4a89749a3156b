// Installations for the store, vault and CLI tests: a draft sealed for its own row with a test vault.
import { randomBytes } from "node:crypto";
import type { Installation, InstallationTokens } from "../../../src/store/installation-records.js";
import type { Vault } from "../../../src/vault/vault.js";

/** Canary Slack tokens: unique per call, with the real prefixes a leak scan looks for. */
export function canaryTokens(): Required<InstallationTokens> {
  const r = randomBytes(12).toString("hex");
  return { botToken: `xoxb-canary-${r}`, refreshToken: `xoxe-1-canary-${r}` };
}

let seq = 0;

/** A team install (or, with `isEnterpriseInstall`, an org-wide one) sealed for its own id under `vault`'s primary key. */
export function installation(
  vault: Vault,
  o: Partial<Omit<Installation, "sealed">> & { tokens?: InstallationTokens } = {},
): Installation {
  const { tokens = canaryTokens(), ...fields } = o;
  const base: Omit<Installation, "sealed"> = {
    id: `inst_${++seq}_${randomBytes(4).toString("hex")}`,
    enterpriseId: null,
    enterpriseName: null,
    teamId: "T1",
    teamName: "Team One",
    isEnterpriseInstall: false,
    appId: "A0APP",
    botId: "B0BOT",
    botUserId: "U0BOT",
    scopes: ["chat:write", "users:read"],
    status: "active",
    statusReason: null,
    tokenExpiresAt: null,
    installedBy: "U0ADMIN",
    installedAt: 1_000,
    updatedAt: 1_000,
    ...fields,
  };
  return { ...base, sealed: vault.sealInstallation(tokens, base) };
}

/** An org-wide install of `enterpriseId` (no team). */
export function orgInstallation(
  vault: Vault,
  enterpriseId: string,
  o: Partial<Omit<Installation, "sealed">> & { tokens?: InstallationTokens } = {},
): Installation {
  return installation(vault, {
    enterpriseId,
    enterpriseName: "Grid Org",
    teamId: null,
    teamName: null,
    isEnterpriseInstall: true,
    ...o,
  });
}
