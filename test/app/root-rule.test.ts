import { existsSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { loadConfig } from "../../src/config/env.js";
import { ConfigError } from "../../src/config/errors.js";
import { parseRegistry } from "../../src/config/registry.js";
import { memoryLogger } from "../../src/log/logger.js";
import { runInProcess } from "../cli/run.js";
import { fixtureRegistryDoc } from "../integration/broker-harness.js";
import { newKeyB64, TempDirs } from "../support/foundation.js";

// Root without SLAUDE_CHILD_UID_BASE: vendors would run as root and could read the broker's
// environment. Production refuses to start, development warns loudly, doctor reports it.

const tmp = new TempDirs();
const running: RunningApp[] = [];
afterEach(async () => {
  for (const a of running.splice(0)) await a.close();
  tmp.cleanup();
});

function env(dir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  // Production without Slack refuses to start unless it is told to run without a workspace.
  return {
    NODE_ENV: "production",
    SLAUDE_WORKSPACE: "none",
    SLAUDE_DATA_DIR: path.join(dir, "data"),
    PORT: "0",
    SLAUDE_ENCRYPTION_KEY: newKeyB64(),
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    ...extra,
  };
}

const registry = () => parseRegistry(fixtureRegistryDoc(), "test");

describe("running as root", () => {
  it("production as root without SLAUDE_CHILD_UID_BASE refuses to start, naming it, and creates nothing", async () => {
    // This machine runs the suite as root: the default (the process's own uid) is judged too.
    expect(process.geteuid?.()).toBe(0);
    for (const euid of [0, undefined]) {
      const dir = tmp.make();
      const config = loadConfig(env(dir));
      const err = await startApp({
        config,
        log: memoryLogger(),
        registry: registry(),
        ...(euid !== undefined ? { euid } : {}),
      }).then(
        (a) => {
          running.push(a);
          return undefined;
        },
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).code).toBe("root_without_uid_base");
      expect((err as ConfigError).message).toContain("SLAUDE_CHILD_UID_BASE");
      expect((err as ConfigError).message).not.toContain(config.encryptionKey!);
      expect(existsSync(config.dataDir)).toBe(false);
    }
  });

  it("production starts as root with SLAUDE_CHILD_UID_BASE, and as a non-root user without it", async () => {
    const withBase = await startApp({
      config: loadConfig(env(tmp.make(), { SLAUDE_CHILD_UID_BASE: "200000" })),
      log: memoryLogger(),
      registry: registry(),
      euid: 0,
    });
    running.push(withBase);
    const notRoot = await startApp({
      config: loadConfig(env(tmp.make())),
      log: memoryLogger(),
      registry: registry(),
      euid: 1000,
    });
    running.push(notRoot);
    expect(withBase.port).toBeGreaterThan(0);
    expect(notRoot.port).toBeGreaterThan(0);
  });

  it("development as root without a uid base starts with a loud warning", async () => {
    const log = memoryLogger();
    const app = await startApp({
      config: loadConfig(env(tmp.make(), { NODE_ENV: "development" })),
      log,
      registry: registry(),
      euid: 0,
    });
    running.push(app);
    const warning = log.lines.find((l) => l.includes("RUNNING AS ROOT"));
    expect(warning).toBeDefined();
    expect(warning).toContain('"level":"warn"');
    expect(warning).toContain("SLAUDE_CHILD_UID_BASE");
    const quiet = memoryLogger();
    running.push(
      await startApp({
        config: loadConfig(env(tmp.make(), { NODE_ENV: "development", SLAUDE_CHILD_UID_BASE: "200000" })),
        log: quiet,
        registry: registry(),
        euid: 0,
      }),
    );
    expect(quiet.lines.join("")).not.toContain("RUNNING AS ROOT");
  });

  it("doctor reports it: an error in production, a warning in development, ok with a uid base", async () => {
    const prod = await runInProcess(["doctor"], env(tmp.make()));
    expect(prod.code).toBe(1);
    expect(prod.stdout).toMatch(/^ERROR process user: running as root without SLAUDE_CHILD_UID_BASE/m);
    const dev = await runInProcess(["doctor"], env(tmp.make(), { NODE_ENV: "development" }));
    expect(dev.stdout).toMatch(/^WARN {2}process user: running as root without SLAUDE_CHILD_UID_BASE/m);
    const ok = await runInProcess(["doctor"], env(tmp.make(), { SLAUDE_CHILD_UID_BASE: "200000" }));
    expect(ok.stdout).toMatch(
      /^ok {4}process user: running as root; vendor children run under their own uids from 200000/m,
    );
  });
});
