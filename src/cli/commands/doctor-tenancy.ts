import { existsSync } from "node:fs";
import { connectStore } from "../../app/store-connect.js";
import type { Config } from "../../config/env.js";
import { bareAdminFinding } from "../../installations/admin-entries.js";
import { openDatabase } from "../../store/sqlite/db.js";
import type { TenantDirectory } from "../../tenancy/tenant-directory.js";
import { StaticTenantDirectory } from "../../tenancy/tenant-directory.js";
import { unboundTokenFinding } from "../../tenancy/unbound-tokens.js";
import { resolveKeyRing } from "../../vault/key-source.js";
import type { Finding } from "./doctor.js";

/**
 * `doctor`'s view of the unbound-host-token rule (src/tenancy/unbound-tokens.ts): with several
 * installations in `tenants`, an unbound SLAUDE_HOST_TOKENS entry is a warning, and an error in
 * production (where `serve` refuses to start). Names counts, never a token.
 */
export async function checkHostTokenTenancy(config: Config, tenants: TenantDirectory): Promise<Finding> {
  const unboundTokens = config.hostTokens.filter((t) => !config.hostTokenTeams.has(t)).length;
  let liveInstallations: number;
  try {
    liveInstallations = await tenants.liveInstallations();
  } catch (err) {
    return {
      check: "host token tenants",
      level: "error",
      message: `the installations could not be counted: ${String(err)}`,
      fix: "check the database (see the database findings above)",
    };
  }
  return {
    check: "host token tenants",
    ...unboundTokenFinding({ unboundTokens, liveInstallations, production: config.nodeEnv === "production" }),
  };
}

/** The installations as doctor reads them: live ones by status, without opening a token. */
export interface InstallationCounts {
  readonly active: number;
  readonly disabled: readonly string[];
}

/** Reads the installations (SQLite read-only, or PostgreSQL); an empty database has none. */
export async function readInstallations(config: Config): Promise<InstallationCounts> {
  if (!config.databaseUrl) {
    if (!existsSync(config.dbPath)) return { active: 0, disabled: [] };
    const db = openDatabase(config.dbPath, { readonly: true });
    try {
      if (!db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'installations'").get())
        return { active: 0, disabled: [] };
      const rows = db
        .prepare(
          "SELECT COALESCE(team_id, enterprise_id) AS tenant, status, status_reason AS reason FROM installations WHERE status <> 'uninstalled'",
        )
        .all() as { tenant: string; status: string; reason: string | null }[];
      return {
        active: rows.filter((r) => r.status === "active").length,
        disabled: rows.filter((r) => r.status === "disabled").map((r) => `${r.tenant} (${r.reason ?? "operator"})`),
      };
    } finally {
      db.close();
    }
  }
  const store = connectStore(
    config,
    () => Date.now(),
    () => resolveKeyRing(config).ring,
  );
  try {
    const rows = await store.installations.list(10_000);
    return {
      active: rows.filter((r) => r.status === "active").length,
      disabled: rows
        .filter((r) => r.status === "disabled")
        .map((r) => `${r.teamId ?? r.enterpriseId ?? "?"} (${r.statusReason ?? "operator"})`),
    };
  } finally {
    await store.close();
  }
}

/** The installations finding, and the bare SLAUDE_ADMINS entries that count nowhere once several are served. */
export function installationFindings(config: Config, counts: InstallationCounts): Finding[] {
  const live = counts.active + counts.disabled.length;
  const out: Finding[] = [];
  if (config.slack.configured) {
    const what = `${counts.active} active Slack installation(s)${counts.disabled.length ? `; disabled: ${counts.disabled.join(", ")}` : ""}`;
    out.push(
      counts.disabled.length
        ? {
            check: "slack installations",
            level: "warn",
            message: what,
            fix: "reinstall the app in those workspaces (or `slaude-connect installations enable ID` after fixing an operator's disable); see docs/slack-setup.md",
          }
        : {
            check: "slack installations",
            level: "ok",
            message: live
              ? what
              : config.slack.botToken
                ? "none recorded yet: serve records SLACK_BOT_TOKEN at start"
                : "none yet: install the app from /slack/install",
          },
    );
  }
  const bare = bareAdminFinding(config.admins, live, config.production);
  if (bare) out.push({ check: "admins", ...bare });
  return out;
}

/** The counted installations as the host-token rule's tenant directory. */
export function installationDirectory(counts: InstallationCounts): StaticTenantDirectory {
  return new StaticTenantDirectory(counts.active + counts.disabled.length);
}
