// `doctor` as the real process: a bad setup is reported, never a crash.
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { newKeyB64, TempDirs, writeRegistryFile } from "../support/foundation.js";
import { runBin, runInProcess } from "./run.js";

const tmp = new TempDirs();
afterEach(() => tmp.cleanup());

function baseEnv(): NodeJS.ProcessEnv {
  const dir = tmp.make();
  return {
    SLAUDE_DATA_DIR: path.join(dir, "data"),
    SLAUDE_REGISTRY_PATH: writeRegistryFile(dir),
    SLAUDE_CHROMIUM_PATH: path.join(dir, "no-such-chromium"),
  };
}

describe("doctor", () => {
  it("warns about missing Slack config and a bogus Chromium path, and exits 0", async () => {
    const env = { ...baseEnv(), SLAUDE_ENCRYPTION_KEY: newKeyB64() };
    const r = await runBin(["doctor"], env);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^ok {4}encryption key: SLAUDE_ENCRYPTION_KEY is a valid 32-byte key$/m);
    expect(r.stdout).toMatch(/^WARN {2}chromium: .*no-such-chromium not found or not executable$/m);
    expect(r.stdout).toMatch(
      /^WARN {2}slack: Slack is not configured \(missing SLACK_BOT_TOKEN, SLACK_SIGNING_SECRET\)/m,
    );
    expect(r.stdout).toMatch(/^ok {4}service registry: .*2 service\(s\): svc, other$/m);
    expect(r.stdout).toMatch(/^no errors, \d+ warning\(s\)$/m);
    expect(r.stdout).not.toContain(env.SLAUDE_ENCRYPTION_KEY);
  });

  it("exits 1 naming SLAUDE_ENCRYPTION_KEY when the key is malformed, without printing it", async () => {
    const canary = "CANARY-doctor-key-6e6e";
    const r = await runBin(["doctor"], { ...baseEnv(), SLAUDE_ENCRYPTION_KEY: canary });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^ERROR encryption key: SLAUDE_ENCRYPTION_KEY is not valid base64/m);
    expect(r.stdout + r.stderr).not.toContain(canary);
    expect(r.stdout).toMatch(/^1 error\(s\)/m);
  });

  it("reports a bad environment, a broken registry and a newer database as errors", async () => {
    const env = baseEnv();
    const badEnv = await runInProcess(["doctor"], { ...env, PORT: "nope" }, {});
    expect(badEnv.code).toBe(1);
    expect(badEnv.stdout).toMatch(/^ERROR environment: invalid environment\n\s+PORT: /m);

    const brokenRegistry = await runInProcess(["doctor"], {
      ...env,
      SLAUDE_REGISTRY_PATH: path.join(env.SLAUDE_DATA_DIR!, "..", "missing.json"),
    });
    expect(brokenRegistry.code).toBe(1);
    expect(brokenRegistry.stdout).toMatch(/^ERROR service registry: .*missing\.json cannot be read/m);
    // Without a key in development: a warning, not an error.
    expect(brokenRegistry.stdout).toMatch(/^WARN {2}encryption key: no key/m);

    const dbPath = path.join(env.SLAUDE_DATA_DIR!, "slaude.db");
    const { store } = openSqliteStore(dbPath);
    store.db
      .prepare("INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (999, 'future', 'x', 0)")
      .run();
    await store.close();
    const newer = await runInProcess(["doctor"], env);
    expect(newer.code).toBe(1);
    expect(newer.stdout).toMatch(/^ERROR database: schema 999 is newer than this version knows/m);
  });
});
