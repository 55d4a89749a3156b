import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/env.js";
import { ConfigError } from "../../src/config/errors.js";
import { devKeyPath, resolveKeyRing } from "../../src/vault/key-source.js";
import { KeyRing } from "../../src/vault/keyring.js";
import { newKeyB64, TempDirs } from "../support/foundation.js";

const tmp = new TempDirs();
afterEach(() => tmp.cleanup());

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return e as ConfigError;
  }
  throw new Error("expected a ConfigError");
}

describe("resolveKeyRing", () => {
  it("uses SLAUDE_ENCRYPTION_KEY (and previous keys) when set", () => {
    const key = newKeyB64();
    const prev = newKeyB64();
    const dir = tmp.make();
    const src = resolveKeyRing(
      loadConfig({ SLAUDE_DATA_DIR: dir, SLAUDE_ENCRYPTION_KEY: key, SLAUDE_ENCRYPTION_KEY_PREVIOUS: prev }),
    );
    expect(src.origin).toBe("env");
    expect(src.ring.primaryId).toBe(KeyRing.fromBase64(key).primaryId);
    expect(src.ring.has(KeyRing.fromBase64(prev).primaryId)).toBe(true);
    expect(existsSync(devKeyPath(dir))).toBe(false);
  });

  it("generates a 0600 development key once, then reuses it", () => {
    const dir = tmp.make();
    const config = loadConfig({ SLAUDE_DATA_DIR: dir });
    const first = resolveKeyRing(config);
    expect(first.origin).toBe("dev-generated");
    const file = devKeyPath(dir);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const second = resolveKeyRing(config);
    expect(second.origin).toBe("dev-file");
    expect(second.ring.primaryId).toBe(first.ring.primaryId);
    expect(KeyRing.fromBase64(readFileSync(file, "utf8").trim()).primaryId).toBe(first.ring.primaryId);
  });

  it("refuses to start production without a key and writes no key file", () => {
    const dir = tmp.make();
    const config = { ...loadConfig({ SLAUDE_DATA_DIR: dir }), production: true };
    const err = configError(() => resolveKeyRing(config));
    expect(err.code).toBe("missing_key");
    expect(err.message).toContain("SLAUDE_ENCRYPTION_KEY");
    expect(existsSync(devKeyPath(dir))).toBe(false);
  });

  it("names the variable of a malformed key and never echoes its value", () => {
    const dir = tmp.make();
    const canary = "CANARY-not-a-valid-key-7f3a9";
    const err = configError(() =>
      resolveKeyRing(loadConfig({ SLAUDE_DATA_DIR: dir, SLAUDE_ENCRYPTION_KEY: canary, NODE_ENV: "production" })),
    );
    expect(err.code).toBe("invalid_key");
    expect(err.message).toContain("SLAUDE_ENCRYPTION_KEY");
    expect(err.message).not.toContain(canary);
    expect(JSON.stringify(err, Object.getOwnPropertyNames(err))).not.toContain(canary);

    const prevErr = configError(() =>
      resolveKeyRing(
        loadConfig({
          SLAUDE_DATA_DIR: dir,
          SLAUDE_ENCRYPTION_KEY: newKeyB64(),
          SLAUDE_ENCRYPTION_KEY_PREVIOUS: canary,
        }),
      ),
    );
    expect(prevErr.message).toContain("SLAUDE_ENCRYPTION_KEY_PREVIOUS[0]");
    expect(prevErr.message).not.toContain(canary);
  });

  it("blames a bad previous key on SLAUDE_ENCRYPTION_KEY_PREVIOUS, never on a good development key file", () => {
    const dir = tmp.make();
    const first = resolveKeyRing(loadConfig({ SLAUDE_DATA_DIR: dir }));
    const keyFile = readFileSync(devKeyPath(dir), "utf8");
    const err = configError(() =>
      resolveKeyRing(loadConfig({ SLAUDE_DATA_DIR: dir, SLAUDE_ENCRYPTION_KEY_PREVIOUS: "bad" })),
    );
    expect(err.code).toBe("invalid_key");
    expect(err.message).toContain("SLAUDE_ENCRYPTION_KEY_PREVIOUS[0]");
    // Telling the operator to delete a valid key file would lose every credential.
    expect(err.message).not.toMatch(/key file|delete/);
    expect(readFileSync(devKeyPath(dir), "utf8")).toBe(keyFile);
    expect(resolveKeyRing(loadConfig({ SLAUDE_DATA_DIR: dir })).ring.primaryId).toBe(first.ring.primaryId);

    // On a first start, a bad previous key is a configuration error too, and no key file is left behind.
    const fresh = tmp.make();
    const err2 = configError(() =>
      resolveKeyRing(loadConfig({ SLAUDE_DATA_DIR: fresh, SLAUDE_ENCRYPTION_KEY_PREVIOUS: "bad" })),
    );
    expect(err2.message).toContain("SLAUDE_ENCRYPTION_KEY_PREVIOUS[0]");
    expect(existsSync(devKeyPath(fresh))).toBe(false);
  });

  it("refuses a malformed development key file instead of replacing it", () => {
    const dir = tmp.make();
    writeFileSync(devKeyPath(dir), "garbage\n", { mode: 0o600 });
    const err = configError(() => resolveKeyRing(loadConfig({ SLAUDE_DATA_DIR: dir })));
    expect(err.code).toBe("invalid_key");
    expect(readFileSync(devKeyPath(dir), "utf8")).toBe("garbage\n");
  });
});
