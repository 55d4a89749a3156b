// The configuration most app-level tests start from: a real app on an ephemeral port with its own
// data directory, a fresh master key and the given host tokens; each test adds what it is about.
import { randomBytes } from "node:crypto";
import { type Config, loadConfig } from "../../src/config/env.js";

/** A test app's configuration: `dir` as its data directory, `hostTokens` (comma-separated), plus `extra` variables. */
export function testAppConfig(dir: string, hostTokens: string, extra: Record<string, string> = {}): Config {
  return loadConfig({
    NODE_ENV: "test",
    SLAUDE_DATA_DIR: dir,
    PORT: "0",
    SLAUDE_HOST_TOKENS: hostTokens,
    SLAUDE_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    ...extra,
  });
}
