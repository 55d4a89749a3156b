import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { randomBytes } from "node:crypto";
import type { Config } from "../config/env.js";
import { ConfigError } from "../config/errors.js";
import { VaultError } from "./errors.js";
import { KeyRing } from "./keyring.js";

/** Where a development start keeps its generated key. */
export function devKeyPath(dataDir: string): string {
  return path.join(dataDir, "dev-encryption.key");
}

/** The outcome of resolving the master key; `generated` means a development key was just written. */
export interface KeySource {
  readonly ring: KeyRing;
  readonly origin: "env" | "dev-file" | "dev-generated";
  readonly devKeyFile?: string;
}

/**
 * Builds the key ring from SLAUDE_ENCRYPTION_KEY (+ previous keys). Without a key, a development
 * start uses (or generates, mode 0600) a key file in the data dir; production never does.
 */
export function resolveKeyRing(config: Config): KeySource {
  try {
    if (config.encryptionKey) return { ring: KeyRing.fromBase64(config.encryptionKey, config.previousEncryptionKeys), origin: "env" };
  } catch (cause) {
    if (cause instanceof VaultError) throw new ConfigError("invalid_key", cause.message, { cause });
    throw cause;
  }
  if (config.production) throw new ConfigError("missing_key", "SLAUDE_ENCRYPTION_KEY is required when NODE_ENV=production");
  const file = devKeyPath(config.dataDir);
  if (existsSync(file)) {
    try {
      return { ring: KeyRing.fromBase64(readFileSync(file, "utf8").trim(), config.previousEncryptionKeys), origin: "dev-file", devKeyFile: file };
    } catch (cause) {
      throw new ConfigError("invalid_key", `development key file ${file} is malformed; delete it only if the database holds nothing you need`, { cause });
    }
  }
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const key = randomBytes(32).toString("base64");
  writeFileSync(file, key + "\n", { mode: 0o600, flag: "wx" });
  chmodSync(file, 0o600);
  return { ring: KeyRing.fromBase64(key, config.previousEncryptionKeys), origin: "dev-generated", devKeyFile: file };
}
