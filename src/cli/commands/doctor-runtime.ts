// `doctor` checks of what will fail at run time, beyond the settings being well-formed: credentials
// no configured key can open, vendor commands the children cannot find, and Slack scopes the bot
// token lacks. (Running as root is the process-user check in doctor.ts, reported once.)

import { accessSync, constants, existsSync } from "node:fs";
import path from "node:path";
import type { Config } from "../../config/env.js";
import type { ServiceRegistry } from "../../config/registry.js";
import { errorMessage } from "../../domain/errors.js";
import { missingScopes, requiredBotScopes } from "../../slack/scopes.js";
import { botTokenScopes } from "../../slack/token-scopes.js";
import { openDatabase } from "../../store/sqlite/db.js";
import { devKeyPath, resolveKeyRing } from "../../vault/key-source.js";
import { decodeMasterKey, keyIdOf } from "../../vault/keyring.js";
import type { Finding } from "./doctor.js";

/** How many stored credentials and Slack installations are sealed under each key id (read-only; empty without a database). */
export function sealedKeyIds(dbPath: string): Map<string, number> {
  const out = new Map<string, number>();
  if (!existsSync(dbPath)) return out;
  const db = openDatabase(dbPath, { readonly: true });
  try {
    for (const table of ["connections", "installations"]) {
      if (!db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table)) continue;
      for (const r of db
        .prepare(`SELECT key_id AS k, count(*) AS n FROM ${table} WHERE key_id IS NOT NULL GROUP BY key_id`)
        .all() as { k: string; n: number }[])
        out.set(r.k, (out.get(r.k) ?? 0) + r.n);
    }
    return out;
  } finally {
    db.close();
  }
}

/** The ids of the keys `serve` would use, without generating a development key as a start would. */
export function configuredKeyIds(config: Config): Set<string> {
  const willGenerate = !config.encryptionKey && !config.production && !existsSync(devKeyPath(config.dataDir));
  if (!willGenerate) return new Set(resolveKeyRing(config).ring.ids());
  return new Set(
    config.previousEncryptionKeys.map((k, i) => keyIdOf(decodeMasterKey(k, `SLAUDE_ENCRYPTION_KEY_PREVIOUS[${i}]`))),
  );
}

/** Stored credentials sealed under a key id the configured key ring does not hold, as "id (n)" strings. */
export function unopenableCredentials(config: Config): string[] {
  const have = configuredKeyIds(config);
  return [...sealedKeyIds(config.dbPath)].filter(([k]) => !have.has(k)).map(([k, n]) => `${n} under key ${k}`);
}

/** Credentials no configured key can open: an error, and `serve` refuses to start on it. */
export function checkKeyIds(config: Config): Finding {
  let lost: string[];
  try {
    lost = unopenableCredentials(config);
  } catch (e) {
    return { check: "stored credentials", level: "error", message: errorMessage(e) };
  }
  return storedKeysFinding(lost);
}

/** The finding for credentials no configured key opens ("n under key k" each), for either store. */
export function storedKeysFinding(lost: readonly string[]): Finding {
  if (!lost.length)
    return {
      check: "stored credentials",
      level: "ok",
      message: "every stored credential is sealed under a configured key",
    };
  return {
    check: "stored credentials",
    level: "error",
    message: `credentials sealed under a key that is not configured: ${lost.join(", ")}; serve refuses to start`,
    fix: "put the old key in SLAUDE_ENCRYPTION_KEY_PREVIOUS (then `slaude-connect keys rotate`); if it is lost, revoke those connections (`connections list --json` shows keyId)",
  };
}

/** Where `command` resolves on `searchPath` (as the children's spawn will look it up), or undefined. */
export function findOnPath(command: string, searchPath: string): string | undefined {
  const candidates = command.includes("/")
    ? [path.resolve(command)]
    : searchPath
        .split(":")
        .filter(Boolean)
        .map((d) => path.join(d, command));
  for (const c of candidates) {
    try {
      accessSync(c, constants.X_OK);
      return c;
    } catch {
      // not here: keep looking
    }
  }
  return undefined;
}

/** Every stdio vendor's command must be found on the children's PATH, or its calls fail at spawn. */
export function checkVendorCommands(config: Config, registry: ServiceRegistry): Finding {
  const searchPath = config.childBaseEnv.PATH ?? "";
  const missing = registry
    .list()
    .flatMap((s) =>
      s.entry.transport.type === "stdio" && !findOnPath(s.entry.transport.command, searchPath)
        ? [`${s.name} (${s.entry.transport.command})`]
        : [],
    );
  if (!missing.length)
    return { check: "vendor commands", level: "ok", message: "every stdio vendor command is on the children's PATH" };
  return {
    check: "vendor commands",
    level: "error",
    message: `not found on the children's PATH (${searchPath}): ${missing.join(", ")}`,
    fix: "install the command, use an absolute path in the registry, or set PATH for the broker (children inherit it)",
  };
}

/** The bot token's scopes against what the code calls (src/slack/scopes.ts); only when Slack is configured. */
export async function checkSlackScopes(config: Config): Promise<Finding | undefined> {
  if (!config.slack.configured) return undefined;
  const r = await botTokenScopes(config.slack);
  if (r.kind === "failed")
    return {
      check: "slack scopes",
      level: "error",
      message: `auth.test failed: ${r.error}`,
      fix: "check SLACK_BOT_TOKEN (and SLACK_API_URL); see docs/slack-setup.md",
    };
  if (!r.scopes)
    return {
      check: "slack scopes",
      level: "warn",
      message: "Slack did not report the token's scopes (no x-oauth-scopes header)",
      fix: `make sure the app has: ${requiredBotScopes().join(", ")}`,
    };
  const missing = missingScopes(r.scopes);
  if (!missing.length)
    return {
      check: "slack scopes",
      level: "ok",
      message: `bot token has every needed scope (${requiredBotScopes().length})`,
    };
  return {
    check: "slack scopes",
    level: "error",
    message: `bot token lacks ${missing.map((m) => `${m.scope} (${m.breaks.join("; ")})`).join(", ")}`,
    fix: "add the scopes in the app's OAuth & Permissions page (or re-create it from slack/manifest.yaml) and reinstall the app; see docs/slack-setup.md",
  };
}
