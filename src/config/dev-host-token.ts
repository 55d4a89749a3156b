import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Config } from "./env.js";
import { ConfigError } from "./errors.js";

// A development start with no SLAUDE_HOST_TOKENS gets one host token, generated once into the data
// directory, so an agent host (the console, the MCP Inspector) can connect at all. A test or
// production start never does: there an empty list still refuses every host.

/** Where a development start keeps its generated host token. */
export function devHostTokenPath(dataDir: string): string {
  return path.join(dataDir, "host-token");
}

/** The host tokens a start accepts, and where a development token came from (never its value). */
export interface HostTokenSource {
  readonly tokens: readonly string[];
  readonly origin: "env" | "none" | "dev-file" | "dev-generated";
  /** The development token file, when one is in use. */
  readonly file?: string;
}

const TOKEN_SHAPE = /^slaude_dev_[A-Za-z0-9_-]{43}$/;

/**
 * The configured host tokens; in development with none configured, the token in
 * `<dataDir>/host-token` (mode 0600), generated on first use and reused across restarts.
 * Throws ConfigError when that file is malformed or readable by others.
 */
export function resolveHostTokens(config: Config): HostTokenSource {
  if (config.hostTokens.length) return { tokens: config.hostTokens, origin: "env" };
  if (config.nodeEnv !== "development") return { tokens: [], origin: "none" };
  const file = devHostTokenPath(config.dataDir);
  if (existsSync(file)) {
    // A token others could read is a token others may have: refuse it, as ssh refuses a readable key.
    if ((statSync(file).mode & 0o077) !== 0)
      throw new ConfigError(
        "invalid_env",
        `host token file ${file} is readable by other users: chmod 600 it, or delete it to generate a new one`,
      );
    const token = readFileSync(file, "utf8").trim();
    if (!TOKEN_SHAPE.test(token))
      throw new ConfigError("invalid_env", `host token file ${file} is malformed: delete it to generate a new one`);
    return { tokens: [token], origin: "dev-file", file };
  }
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const token = `slaude_dev_${randomBytes(32).toString("base64url")}`;
  try {
    // `wx`: two starts racing on a fresh directory never overwrite each other's token.
    writeFileSync(file, `${token}\n`, { mode: 0o600, flag: "wx" });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return resolveHostTokens(config);
    throw err;
  }
  chmodSync(file, 0o600);
  return { tokens: [token], origin: "dev-generated", file };
}
