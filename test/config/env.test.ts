import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/env.js";
import { ConfigError } from "../../src/config/errors.js";

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return e as ConfigError;
  }
  throw new Error("expected a ConfigError");
}

describe("loadConfig", () => {
  it("works with an empty environment, on development defaults", () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      production: false,
      nodeEnv: "development",
      encryptionKey: undefined,
      previousEncryptionKeys: [],
      dataDir: path.resolve("data"),
      dbPath: path.resolve("data", "slaude.db"),
      registryPath: undefined,
      port: 8080,
      bindHost: "127.0.0.1",
      publicUrl: "http://localhost:8080",
      hostTokens: [],
      admins: [],
      logLevel: "info",
      pool: { maxChildren: 32, idleMs: 600_000, callTimeoutMs: 120_000, childUidBase: undefined },
      resultLimits: { maxBytes: 50_000, maxLines: 2_000 },
      chromiumPath: "/usr/bin/chromium",
    });
    expect(c.slack).toMatchObject({ mode: "http", configured: false });
  });

  it("parses lists, numbers, paths and Slack settings", () => {
    const c = loadConfig({
      NODE_ENV: "production",
      SLAUDE_ENCRYPTION_KEY: "k",
      SLAUDE_ENCRYPTION_KEY_PREVIOUS: " a, b ,,",
      SLAUDE_DATA_DIR: "/var/lib/slaude",
      SLAUDE_REGISTRY_PATH: "/etc/slaude/services.json",
      PORT: "0",
      SLAUDE_PUBLIC_URL: "https://broker.example.com/",
      SLAUDE_ADMINS: "U1,U2",
      SLAUDE_POOL_IDLE_SECONDS: "30",
      SLACK_BOT_TOKEN: "xoxb-1",
      SLACK_SIGNING_SECRET: "s",
      IRRELEVANT_VARIABLE: "ignored",
    });
    expect(c.production).toBe(true);
    expect(c.previousEncryptionKeys).toEqual(["a", "b"]);
    expect(c.dbPath).toBe("/var/lib/slaude/slaude.db");
    expect(c.registryPath).toBe("/etc/slaude/services.json");
    expect(c.port).toBe(0);
    expect(c.publicUrl).toBe("https://broker.example.com");
    expect(c.admins).toEqual([
      { teamId: undefined, userId: "U1" },
      { teamId: undefined, userId: "U2" },
    ]);
    expect(c.pool.idleMs).toBe(30_000);
    expect(c.slack.configured).toBe(true);
    // Socket Mode without its app token is a half setup: refused, naming the variable.
    expect(() => loadConfig({ SLACK_MODE: "socket", SLACK_BOT_TOKEN: "xoxb-1", SLACK_SIGNING_SECRET: "s" })).toThrow(
      /SLACK_APP_TOKEN/,
    );
  });

  it("refuses production without SLAUDE_ENCRYPTION_KEY, naming it", () => {
    const err = configError(() => loadConfig({ NODE_ENV: "production" }));
    expect(err.code).toBe("missing_key");
    expect(err.message).toContain("SLAUDE_ENCRYPTION_KEY");
    expect(configError(() => loadConfig({ NODE_ENV: "production", SLAUDE_ENCRYPTION_KEY: "" })).code).toBe(
      "missing_key",
    );
  });

  it("names a bad PORT", () => {
    for (const bad of ["http", "-1", "65536", "80.5"]) {
      const err = configError(() => loadConfig({ PORT: bad }));
      expect(err.code).toBe("invalid_env");
      expect(err.message).toMatch(/^PORT: /m);
    }
  });

  it("names every bad variable and never echoes a value", () => {
    const canary = "CANARY-value-93bd1f";
    const err = configError(() =>
      loadConfig({
        PORT: canary,
        NODE_ENV: canary,
        SLAUDE_PUBLIC_URL: canary,
        SLAUDE_LOG_LEVEL: canary,
        SLACK_API_URL: canary,
        SLAUDE_POOL_MAX_CHILDREN: canary,
      }),
    );
    for (const name of [
      "PORT",
      "NODE_ENV",
      "SLAUDE_PUBLIC_URL",
      "SLAUDE_LOG_LEVEL",
      "SLACK_API_URL",
      "SLAUDE_POOL_MAX_CHILDREN",
    ]) {
      expect(err.message).toMatch(new RegExp(`^${name}: `, "m"));
    }
    expect(err.message).not.toContain(canary);
  });
});

describe("SLAUDE_REPLICA_URL", () => {
  it("is unset by default, kept as a bare origin, and refused with a path, credentials, a query or another scheme", () => {
    expect(loadConfig({}).replicaUrl).toBeUndefined();
    expect(loadConfig({ SLAUDE_REPLICA_URL: "http://10.0.0.5:8080/" }).replicaUrl).toBe("http://10.0.0.5:8080");
    expect(loadConfig({ SLAUDE_REPLICA_URL: "https://replica-2.internal" }).replicaUrl).toBe(
      "https://replica-2.internal",
    );
    for (const bad of [
      "http://10.9.9.9:8080/login",
      "http://user:pw@10.9.9.9:8080",
      "http://10.9.9.9:8080?x=1",
      "ftp://10.9.9.9",
      "10.9.9.9:8080",
      "http://10.9.9.9#a",
    ]) {
      const err = configError(() => loadConfig({ SLAUDE_REPLICA_URL: bad }));
      expect(err.message, bad).toContain("SLAUDE_REPLICA_URL");
      expect(err.message, bad).not.toContain(bad);
    }
  });
});

describe("partial Slack configuration", () => {
  it("names the missing variable instead of silently running without Slack", async () => {
    const { loadConfig } = await import("../../src/config/env.js");
    expect(() => loadConfig({ SLACK_BOT_TOKEN: "xoxb-1" })).toThrow(/SLACK_SIGNING_SECRET/);
    expect(() => loadConfig({ SLACK_MODE: "socket", SLACK_BOT_TOKEN: "xoxb-1" })).toThrow(/SLACK_APP_TOKEN/);
    expect(() => loadConfig({ SLACK_SIGNING_SECRET: "s" })).toThrow(/SLACK_BOT_TOKEN/);
    expect(loadConfig({ SLACK_BOT_TOKEN: "xoxb-1", SLACK_SIGNING_SECRET: "s" }).slack.configured).toBe(true);
  });
});
