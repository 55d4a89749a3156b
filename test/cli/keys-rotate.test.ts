// `slaude-connect keys rotate` re-seals the Slack installations (tenants' bot and refresh tokens)
// with the credentials, in one run: driven in-process through runCli on a real SQLite file.
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/clock/clock.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { KeyRing } from "../../src/vault/keyring.js";
import { Vault } from "../../src/vault/vault.js";
import { canaryTokens, installation } from "../store/contract/installation-fixtures.js";
import { newKeyB64, TempDirs, writeRegistryFile } from "../support/foundation.js";
import { postgresStores } from "../support/postgres-stores.js";
import { runInProcess } from "./run.js";

const pg = postgresStores();
const tmp = new TempDirs();
afterEach(() => tmp.cleanup());

describe("keys rotate", () => {
  it("re-encrypts installations under the new key in the same run, printing no token", async () => {
    const dir = tmp.make();
    const dataDir = path.join(dir, "data");
    const keyA = newKeyB64();
    const keyB = newKeyB64();
    const env = { SLAUDE_DATA_DIR: dataDir, SLAUDE_REGISTRY_PATH: writeRegistryFile(dir), USER: "tester" };
    const clock = new ManualClock();
    const cli = (args: string[], extra: NodeJS.ProcessEnv, stdin?: string) =>
      runInProcess(args, { ...env, ...extra }, { clock, ...(stdin !== undefined ? { stdin } : {}) });
    // A first command creates and migrates the database.
    expect(
      (
        await cli(
          ["connections", "add", "--team", "T1", "--service", "svc"],
          { SLAUDE_ENCRYPTION_KEY: keyA },
          "shared-secret",
        )
      ).code,
    ).toBe(0);
    const tokens = canaryTokens();
    const { store } = openSqliteStore(path.join(dataDir, "slaude.db"));
    const inst = installation(new Vault(KeyRing.fromBase64(keyA)), { tokens });
    await store.installations.upsert(inst, []);
    await store.close();

    const refused = await cli(["keys", "rotate"], { SLAUDE_ENCRYPTION_KEY: keyB });
    expect(refused.code).toBe(1);
    const r = await cli(["keys", "rotate"], { SLAUDE_ENCRYPTION_KEY: keyB, SLAUDE_ENCRYPTION_KEY_PREVIOUS: keyA });
    expect(r.code, r.stderr).toBe(0);
    const idB = KeyRing.fromBase64(keyB).primaryId;
    expect(r.stdout).toBe(`re-encrypted 1 credential(s) and 1 installation(s) under key ${idB}\n`);
    for (const out of [r.stdout, r.stderr, refused.stdout, refused.stderr])
      for (const t of Object.values(tokens)) expect(out).not.toContain(t);

    const reopened = openSqliteStore(path.join(dataDir, "slaude.db")).store;
    try {
      const back = (await reopened.installations.get(inst.id))!;
      expect(back.sealed!.keyId).toBe(idB);
      expect(new Vault(KeyRing.fromBase64(keyB)).openInstallation(back.sealed, back)).toEqual(tokens);
    } finally {
      await reopened.close();
    }
  });

  it("doctor (and so serve, through the same count) sees an installation sealed under a key that is not configured", async () => {
    const dir = tmp.make();
    const dataDir = path.join(dir, "data");
    const keyA = newKeyB64();
    const env = { SLAUDE_DATA_DIR: dataDir, SLAUDE_REGISTRY_PATH: writeRegistryFile(dir), USER: "tester" };
    const { store } = openSqliteStore(path.join(dataDir, "slaude.db"));
    await store.installations.upsert(installation(new Vault(KeyRing.fromBase64(keyA))), []);
    await store.close();
    const idA = KeyRing.fromBase64(keyA).primaryId;
    const lost = await runInProcess(["doctor"], { ...env, SLAUDE_ENCRYPTION_KEY: newKeyB64() });
    expect(lost.stdout).toContain(
      `ERROR stored credentials: credentials sealed under a key that is not configured: 1 under key ${idA}; serve refuses to start`,
    );
    const ok = await runInProcess(["doctor"], { ...env, SLAUDE_ENCRYPTION_KEY: keyA });
    expect(ok.stdout).toMatch(/^ok {4}stored credentials: every stored credential is sealed under a configured key$/m);
  });

  it("doctor on PostgreSQL sees an installation sealed under a key that is not configured", async () => {
    const dir = tmp.make();
    const url = await pg.cluster.createDatabase();
    const keyA = newKeyB64();
    const store = await pg.store(url);
    await store.installations.upsert(installation(new Vault(KeyRing.fromBase64(keyA))), []);
    const env = {
      SLAUDE_DATA_DIR: path.join(dir, "data"),
      SLAUDE_REGISTRY_PATH: writeRegistryFile(dir),
      SLAUDE_DATABASE_URL: url,
      SLAUDE_CHROMIUM_PATH: path.join(dir, "none"),
      USER: "tester",
    };
    const lost = await runInProcess(["doctor"], { ...env, SLAUDE_ENCRYPTION_KEY: newKeyB64() });
    expect(lost.code).toBe(1);
    expect(lost.stdout).toContain(
      `ERROR stored credentials: credentials sealed under a key that is not configured: 1 under key ${KeyRing.fromBase64(keyA).primaryId}; serve refuses to start`,
    );
    const ok = await runInProcess(["doctor"], { ...env, SLAUDE_ENCRYPTION_KEY: keyA });
    expect(ok.stdout).toMatch(/^ok {4}stored credentials: every stored credential is sealed under a configured key$/m);
  });
});
