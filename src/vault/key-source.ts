import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Config } from "../config/env.js";
import { ConfigError } from "../config/errors.js";
import { VaultError } from "./errors.js";
import { decodeMasterKey, KeyRing } from "./keyring.js";

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
  // Previous keys are checked on their own first: a bad one must never be blamed on the primary
  // key or the development key file (deleting that file would lose every stored credential).
  const previous = asConfigError(() =>
    config.previousEncryptionKeys.map((p, i) => decodeMasterKey(p, `SLAUDE_ENCRYPTION_KEY_PREVIOUS[${i}]`)),
  );
  if (config.encryptionKey) {
    const primary = asConfigError(() => decodeMasterKey(config.encryptionKey!));
    return { ring: new KeyRing(primary, previous), origin: "env" };
  }
  if (config.production)
    throw new ConfigError("missing_key", "SLAUDE_ENCRYPTION_KEY is required when NODE_ENV=production");
  const file = devKeyPath(config.dataDir);
  if (existsSync(file)) {
    let primary: Buffer;
    try {
      primary = decodeMasterKey(readFileSync(file, "utf8"));
    } catch (cause) {
      throw new ConfigError(
        "invalid_key",
        `development key file ${file} is malformed; delete it only if the database holds nothing you need`,
        { cause },
      );
    }
    return { ring: new KeyRing(primary, previous), origin: "dev-file", devKeyFile: file };
  }
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const key = randomBytes(32);
  writeFileSync(file, `${key.toString("base64")}\n`, { mode: 0o600, flag: "wx" });
  chmodSync(file, 0o600);
  return { ring: new KeyRing(key, previous), origin: "dev-generated", devKeyFile: file };
}

/** Runs `fn`, turning a VaultError (a bad key) into a start-up ConfigError with the same safe message. */
function asConfigError<T>(fn: () => T): T {
  try {
    return fn();
  } catch (cause) {
    if (cause instanceof VaultError) throw new ConfigError("invalid_key", cause.message, { cause });
    throw cause;
  }
}
