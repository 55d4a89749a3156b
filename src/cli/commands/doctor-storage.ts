// `doctor` checks of what this machine keeps at rest: the encryption keys the credentials are
// sealed with, and the SQLite database they are stored in (PostgreSQL is doctor-postgres.ts).

import { existsSync } from "node:fs";
import type { Config } from "../../config/env.js";
import { errorMessage } from "../../domain/errors.js";
import { openDatabase } from "../../store/sqlite/db.js";
import { readMigrations } from "../../store/sqlite/migrator.js";
import { devKeyPath } from "../../vault/key-source.js";
import { decodeMasterKey } from "../../vault/keyring.js";
import type { Finding } from "./doctor.js";

/** The master key and the previous keys decode; a development start without one is a warning. */
export function checkKey(config: Config): Finding[] {
  const out: Finding[] = [];
  if (config.encryptionKey) {
    try {
      decodeMasterKey(config.encryptionKey);
      out.push({ check: "encryption key", level: "ok", message: "SLAUDE_ENCRYPTION_KEY is a valid 32-byte key" });
    } catch (e) {
      out.push({
        check: "encryption key",
        level: "error",
        message: errorMessage(e),
        fix: "generate one with `slaude-connect keys generate`",
      });
    }
    config.previousEncryptionKeys.forEach((k, i) => {
      try {
        decodeMasterKey(k, `SLAUDE_ENCRYPTION_KEY_PREVIOUS[${i}]`);
      } catch (e) {
        out.push({ check: "previous keys", level: "error", message: errorMessage(e) });
      }
    });
  } else if (config.production) {
    out.push({
      check: "encryption key",
      level: "error",
      message: "SLAUDE_ENCRYPTION_KEY is not set and NODE_ENV=production",
      fix: "set it to `slaude-connect keys generate` output",
    });
  } else {
    const file = devKeyPath(config.dataDir);
    out.push({
      check: "encryption key",
      level: "warn",
      message: existsSync(file)
        ? `development key file in use (${file})`
        : "no key: a development key will be generated on first start",
      fix: "set SLAUDE_ENCRYPTION_KEY and NODE_ENV=production for real credentials",
    });
  }
  return out;
}

/** The SQLite file: present, intact, and at the schema version this build knows. */
export function checkDatabase(config: Config): Finding {
  if (!existsSync(config.dbPath)) {
    return {
      check: "database",
      level: "warn",
      message: `${config.dbPath} does not exist yet`,
      fix: "run `slaude-connect migrate` or start the server",
    };
  }
  try {
    const db = openDatabase(config.dbPath, { readonly: true });
    try {
      const known = readMigrations().at(-1)?.version ?? 0;
      const hasTable = db
        .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'")
        .get();
      const current = hasTable
        ? ((db.prepare("SELECT max(version) AS v FROM schema_migrations").get() as { v: number | null }).v ?? 0)
        : 0;
      const check = (db.pragma("quick_check", { simple: true }) as string) ?? "unknown";
      if (check !== "ok")
        return {
          check: "database",
          level: "error",
          message: `integrity check failed: ${check}`,
          fix: "restore from a backup",
        };
      if (current > known)
        return {
          check: "database",
          level: "error",
          message: `schema ${current} is newer than this version knows (${known})`,
          fix: "upgrade slaude-connect",
        };
      if (current < known)
        return {
          check: "database",
          level: "warn",
          message: `schema ${current}, ${known - current} migration(s) pending`,
          fix: "run `slaude-connect migrate`",
        };
      return { check: "database", level: "ok", message: `${config.dbPath} (schema ${current}, integrity ok)` };
    } finally {
      db.close();
    }
  } catch (e) {
    return { check: "database", level: "error", message: errorMessage(e) };
  }
}
