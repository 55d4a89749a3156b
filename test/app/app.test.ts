import { existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { ManualClock } from "../../src/clock/clock.js";
import { loadConfig } from "../../src/config/env.js";
import { ConfigError } from "../../src/config/errors.js";
import { VERSION } from "../../src/domain/version.js";
import { memoryLogger } from "../../src/log/logger.js";
import { devKeyPath } from "../../src/vault/key-source.js";
import { newKeyB64, TempDirs, writeRegistryFile } from "../support/foundation.js";

const tmp = new TempDirs();
const running: RunningApp[] = [];
afterEach(async () => {
  for (const app of running.splice(0)) await app.close();
  tmp.cleanup();
});

function devEnv(dir: string): NodeJS.ProcessEnv {
  return {
    NODE_ENV: "development",
    SLAUDE_DATA_DIR: path.join(dir, "data"),
    PORT: "0",
    SLAUDE_REGISTRY_PATH: writeRegistryFile(dir),
  };
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => {
      throw new Error("expected a rejection");
    },
    (e: unknown) => e,
  );
}

describe("startApp", () => {
  it("starts on a fresh data dir with no key: /healthz ok, 0600 dev key and database", async () => {
    const dir = tmp.make();
    const config = loadConfig(devEnv(dir));
    const log = memoryLogger();
    const app = await startApp({ config, log, clock: new ManualClock() });
    running.push(app);

    expect(app.port).toBeGreaterThan(0);
    expect(app.url).toBe(`http://127.0.0.1:${app.port}`);
    const res = await fetch(`${app.url}/healthz`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("application/json");
    expect(await res.json()).toEqual({ status: "ok", version: VERSION });
    expect(VERSION).toMatch(/^\d+\.\d+\.\d+/);

    const keyFile = devKeyPath(config.dataDir);
    expect(existsSync(keyFile)).toBe(true);
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    expect(statSync(config.dbPath).mode & 0o777).toBe(0o600);
    for (const side of [`${config.dbPath}-wal`, `${config.dbPath}-shm`]) {
      if (existsSync(side)) expect(statSync(side).mode & 0o777, side).toBe(0o600);
    }
    expect(statSync(config.dataDir).mode & 0o777).toBe(0o700);
    // The operator is warned loudly; the key itself is never logged.
    const key = readFileSync(keyFile, "utf8").trim();
    expect(log.lines.some((l) => l.includes("DEVELOPMENT ENCRYPTION KEY"))).toBe(true);
    expect(log.lines.join("")).not.toContain(key);

    expect((await fetch(`${app.url}/nope`)).status).toBe(404);
  });

  it("closes cleanly: port released, database closed, close() idempotent", async () => {
    const dir = tmp.make();
    const config = loadConfig({ ...devEnv(dir), SLAUDE_ENCRYPTION_KEY: newKeyB64() });
    const app = await startApp({ config, log: memoryLogger() });
    expect((await fetch(`${app.url}/healthz`)).status).toBe(200);
    await app.close();
    await app.close();
    expect(await app.store.ping()).toBe(false);
    await expect(fetch(`${app.url}/healthz`)).rejects.toThrow();
    // With a key in the environment, no development key file is written.
    expect(existsSync(devKeyPath(config.dataDir))).toBe(false);

    // The same data dir starts again (same port is free again too).
    const again = await startApp({ config: { ...config, port: app.port }, log: memoryLogger() });
    running.push(again);
    expect(again.port).toBe(app.port);
    expect(await (await fetch(`${again.url}/healthz`)).json()).toMatchObject({ status: "ok" });
    expect(await (await fetch(`${again.url}/readyz`)).json()).toMatchObject({ database: "ok" });
  });

  it("a dead database makes it not ready (/readyz 503), while /healthz, the liveness probe, stays 200", async () => {
    const dir = tmp.make();
    const app = await startApp({
      config: loadConfig({ ...devEnv(dir), SLAUDE_ENCRYPTION_KEY: newKeyB64() }),
      log: memoryLogger(),
    });
    running.push(app);
    await app.store.close();
    const res = await fetch(`${app.url}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok", version: VERSION });
    const ready = await fetch(`${app.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ status: "not_ready", database: "unavailable" });
  });

  it("reuses the development key on the next start", async () => {
    const dir = tmp.make();
    const config = loadConfig(devEnv(dir));
    const first = await startApp({ config, log: memoryLogger() });
    const key = readFileSync(devKeyPath(config.dataDir), "utf8");
    await first.close();
    const second = await startApp({ config, log: memoryLogger() });
    running.push(second);
    expect(readFileSync(devKeyPath(config.dataDir), "utf8")).toBe(key);
  });

  it("refuses production without a key, naming SLAUDE_ENCRYPTION_KEY, and creates nothing", async () => {
    const dir = tmp.make();
    const env = { ...devEnv(dir), NODE_ENV: "production" };
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(/SLAUDE_ENCRYPTION_KEY/);

    // Even a Config built by hand cannot start production without a key.
    const config = { ...loadConfig(devEnv(dir)), production: true, nodeEnv: "production" as const };
    const err = await rejection(startApp({ config, log: memoryLogger() }));
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).message).toContain("SLAUDE_ENCRYPTION_KEY");
    expect(existsSync(config.dataDir)).toBe(false);
  });

  it("refuses a malformed key without echoing it", async () => {
    const dir = tmp.make();
    const canary = "CANARY-bad-key-5d21";
    const config = loadConfig({ ...devEnv(dir), NODE_ENV: "production", SLAUDE_ENCRYPTION_KEY: canary });
    const log = memoryLogger();
    const err = await rejection(startApp({ config, log }));
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).code).toBe("invalid_key");
    expect((err as ConfigError).message).toContain("SLAUDE_ENCRYPTION_KEY");
    expect((err as ConfigError).message).not.toContain(canary);
    expect(log.lines.join("")).not.toContain(canary);
  });
});
