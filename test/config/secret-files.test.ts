import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { envSecretSource, loadConfig } from "../../src/config/env.js";
import { ConfigError } from "../../src/config/errors.js";
import { SECRET_VARIABLES } from "../../src/config/secret-files.js";
import { runBin } from "../cli/run.js";
import { newKeyB64, TempDirs } from "../support/foundation.js";

// `<NAME>_FILE` variants of every secret variable: read from a private file, both forms refused,
// loose permissions refused, and no error ever carries the secret.

const tmp = new TempDirs();
afterEach(() => tmp.cleanup());

function secretFile(content: string, mode = 0o600): string {
  const file = path.join(tmp.make(), "secret");
  writeFileSync(file, content);
  chmodSync(file, mode);
  return file;
}

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return e as ConfigError;
  }
  throw new Error("expected a ConfigError");
}

describe("*_FILE secret variables", () => {
  it("every secret variable has a _FILE variant, read and trimmed; lists take one entry per line", () => {
    expect([...SECRET_VARIABLES].sort()).toEqual([
      "SLACK_APP_TOKEN",
      "SLACK_BOT_TOKEN",
      "SLACK_CLIENT_ID",
      "SLACK_CLIENT_SECRET",
      "SLACK_SIGNING_SECRET",
      "SLACK_STATE_SECRET",
      "SLAUDE_DATABASE_URL",
      "SLAUDE_ENCRYPTION_KEY",
      "SLAUDE_ENCRYPTION_KEY_PREVIOUS",
      "SLAUDE_HOST_TOKENS",
      "SLAUDE_METRICS_TOKEN",
    ]);
    const key = newKeyB64();
    const old = newKeyB64();
    const c = loadConfig({
      NODE_ENV: "production",
      SLACK_MODE: "socket",
      SLAUDE_ENCRYPTION_KEY_FILE: secretFile(`${key}\n`),
      SLAUDE_ENCRYPTION_KEY_PREVIOUS_FILE: secretFile(`${old}\n`),
      SLAUDE_HOST_TOKENS_FILE: secretFile("host-token-one\nhost-token-two,host-token-three\n\n"),
      SLACK_BOT_TOKEN_FILE: secretFile("xoxb-file-bot\n"),
      SLACK_SIGNING_SECRET_FILE: secretFile("file-signing-secret"),
      SLACK_APP_TOKEN_FILE: secretFile("xapp-file-app\r\n", 0o640),
      SLAUDE_DATABASE_URL_FILE: secretFile(
        "postgres://slaude:file-db-password@db.internal:5432/slaude?sslmode=verify-full\n",
      ),
    });
    expect(c.databaseUrl).toBe("postgres://slaude:file-db-password@db.internal:5432/slaude?sslmode=verify-full");
    expect(c.encryptionKey).toBe(key);
    expect(c.previousEncryptionKeys).toEqual([old]);
    expect(c.hostTokens).toEqual(["host-token-one", "host-token-two", "host-token-three"]);
    expect(c.slack).toMatchObject({
      botToken: "xoxb-file-bot",
      signingSecret: "file-signing-secret",
      appToken: "xapp-file-app",
      configured: true,
    });
  });

  it("setting both X and X_FILE is an error naming both", () => {
    for (const name of SECRET_VARIABLES) {
      const canary = `CANARY-both-${name}`;
      const err = configError(() => loadConfig({ [name]: canary, [`${name}_FILE`]: secretFile(canary) }));
      expect(err.code).toBe("invalid_secret_file");
      expect(err.message).toContain(`${name} and ${name}_FILE are both set`);
      expect(err.message).not.toContain(canary);
    }
  });

  it("refuses a file other users can read or write, a group can write, a missing, empty or non-regular file, naming the variable", () => {
    const canary = "CANARY-loose-file-7f3a";
    for (const mode of [0o644, 0o604, 0o660, 0o666, 0o601]) {
      const err = configError(() =>
        loadConfig({ SLACK_BOT_TOKEN_FILE: secretFile(canary, mode), SLACK_SIGNING_SECRET: "s" }),
      );
      expect(err.message, mode.toString(8)).toMatch(
        /^SLACK_BOT_TOKEN_FILE: .* has mode 0\d+, open to other users: `chmod 600/,
      );
      expect(err.message).not.toContain(canary);
    }
    const dir = tmp.make();
    expect(configError(() => loadConfig({ SLAUDE_HOST_TOKENS_FILE: path.join(dir, "missing") })).message).toMatch(
      /^SLAUDE_HOST_TOKENS_FILE: .*missing cannot be read \(ENOENT\)/,
    );
    expect(configError(() => loadConfig({ SLAUDE_ENCRYPTION_KEY_FILE: secretFile("\n \n") })).message).toMatch(
      /^SLAUDE_ENCRYPTION_KEY_FILE: .* is empty/,
    );
    const sub = path.join(dir, "sub");
    mkdirSync(sub, { mode: 0o700 });
    expect(configError(() => loadConfig({ SLAUDE_ENCRYPTION_KEY_FILE: sub })).message).toMatch(
      /^SLAUDE_ENCRYPTION_KEY_FILE: .* is not a regular file/,
    );
  });

  it("a registry-named secret (an OAuth client secret) can come from <NAME>_FILE too", () => {
    const secretOf = envSecretSource({
      GITLAB_CLIENT_SECRET_FILE: secretFile("client-secret-from-file\n"),
      OTHER: "x",
    });
    expect(secretOf("GITLAB_CLIENT_SECRET")).toBe("client-secret-from-file");
    expect(secretOf("MISSING_SECRET")).toBeUndefined();
    expect(() => envSecretSource({ A: "x", A_FILE: secretFile("y") })("A")).toThrow(/A and A_FILE are both set/);
  });

  it("the real CLI reads _FILE secrets: doctor sees the key and the host tokens, and prints neither", async () => {
    const dir = tmp.make();
    const key = newKeyB64();
    const token = `host-token-${"z".repeat(32)}`;
    const r = await runBin(["doctor"], {
      SLAUDE_DATA_DIR: path.join(dir, "data"),
      SLAUDE_ENCRYPTION_KEY_FILE: secretFile(key),
      SLAUDE_HOST_TOKENS_FILE: secretFile(token),
      SLAUDE_CHROMIUM_PATH: "/nonexistent",
    });
    expect(r.stdout).toMatch(/^ok {4}encryption key: SLAUDE_ENCRYPTION_KEY is a valid 32-byte key$/m);
    expect(r.stdout).toMatch(/^ok {4}host tokens: 1 host token\(s\)$/m);
    expect(r.stdout + r.stderr).not.toContain(key);
    expect(r.stdout + r.stderr).not.toContain(token);
  });
});
