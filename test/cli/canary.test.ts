// The real installed CLI process, with a random canary secret on stdin: it must be stored encrypted
// and never show up anywhere else.
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/store/sqlite/db.js";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { bindingOf } from "../../src/vault/binding.js";
import { KeyRing } from "../../src/vault/keyring.js";
import { Vault } from "../../src/vault/vault.js";
import { newKeyB64, TempDirs, writeRegistryFile } from "../support/foundation.js";
import { runBin } from "./run.js";

const tmp = new TempDirs();
afterEach(() => tmp.cleanup());

function setup() {
  const dir = tmp.make();
  const key = newKeyB64();
  const dataDir = path.join(dir, "data");
  const env: NodeJS.ProcessEnv = {
    NODE_ENV: "development",
    SLAUDE_DATA_DIR: dataDir,
    SLAUDE_REGISTRY_PATH: writeRegistryFile(dir),
    SLAUDE_ENCRYPTION_KEY: key,
    USER: "tester",
  };
  return { dir, key, dataDir, dbPath: path.join(dataDir, "slaude.db"), env };
}

/** Every file the store left in the data dir (database, -wal, -shm, anything else). */
function dataFiles(dataDir: string): { name: string; bytes: Buffer }[] {
  if (!existsSync(dataDir)) return [];
  return readdirSync(dataDir).map((name) => ({ name, bytes: readFileSync(path.join(dataDir, name)) }));
}

/** Reads the database without writing to it. */
function readOnlyStore(dbPath: string): SqliteStore {
  return new SqliteStore(openDatabase(dbPath, { readonly: true }));
}

describe("connections add through the real process", () => {
  it("stores the canary encrypted; it never appears in the database files, output, list or audit", async () => {
    const { dir, key, dataDir, dbPath, env } = setup();
    const canary = `canary-${randomBytes(24).toString("hex")}`;
    const forms = [canary, Buffer.from(canary).toString("base64"), Buffer.from(canary).toString("hex")];

    const argv = ["connections", "add", "--team", "T1", "--service", "svc", "--scope", "shared", "--label", "ops bot"];
    const add = await runBin(argv, env, { stdin: `${canary}\n`, cwd: dir });
    expect(add.stderr).toBe("");
    expect(add.code).toBe(0);
    const id = /^stored (conn_[A-Za-z0-9_-]+) \(svc, shared, expires \S+\)$/m.exec(add.stdout)?.[1];
    expect(id, add.stdout).toBeDefined();
    expect(argv.join(" ")).not.toContain(canary);

    const list = await runBin(["connections", "list", "--json"], env, { cwd: dir });
    const audit = await runBin(["audit", "--jsonl"], env, { cwd: dir });
    expect(list.code).toBe(0);
    expect(audit.code).toBe(0);

    for (const r of [add, list, audit]) {
      for (const f of forms) {
        expect(r.stdout).not.toContain(f);
        expect(r.stderr).not.toContain(f);
      }
    }

    const files = dataFiles(dataDir);
    expect(files.map((f) => f.name)).toContain("slaude.db");
    for (const { name, bytes } of files) {
      for (const f of forms) expect(bytes.includes(Buffer.from(f)), `${f} in ${name}`).toBe(false);
    }

    const listed = list.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({
      id,
      teamId: "T1",
      ownerUserId: null,
      service: "svc",
      scope: "shared",
      status: "active",
      label: "ops bot",
      hasSecret: true,
      keyId: KeyRing.fromBase64(key).primaryId,
    });
    expect(Object.keys(listed[0]!)).not.toContain("sealed");

    const events = audit.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(events).toEqual([
      expect.objectContaining({
        event: "connection_created",
        connectionId: id,
        decision: "shared",
        actor: "cli:tester",
      }),
    ]);

    // The stored ciphertext decrypts back to the canary with the same key, and only with it.
    const store = readOnlyStore(dbPath);
    try {
      const c = (await store.connections.get(id!))!;
      expect(new Vault(KeyRing.fromBase64(key)).openCredential(c.sealed, bindingOf(c))).toEqual({
        kind: "fields",
        fields: { token: canary },
      });
      expect(() => new Vault(KeyRing.fromBase64(newKeyB64())).openCredential(c.sealed, bindingOf(c))).toThrow();
    } finally {
      await store.close();
    }
  });

  it("refuses an unknown service with exit 1 and writes nothing", async () => {
    const { dir, dbPath, env } = setup();
    const secret = `canary-${randomBytes(8).toString("hex")}`;
    const r = await runBin(["connections", "add", "--team", "T1", "--service", "nope"], env, {
      stdin: secret,
      cwd: dir,
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('unknown service "nope"');
    expect(r.stderr).toContain("known: svc, other");
    expect(r.stdout + r.stderr).not.toContain(secret);
    if (existsSync(dbPath)) {
      const store = readOnlyStore(dbPath);
      try {
        expect(await store.connections.list({})).toEqual([]);
        expect(await store.audit.count()).toBe(0);
      } finally {
        await store.close();
      }
    }
  });

  it("refuses positional arguments to add (a secret must never be in argv) and writes nothing", async () => {
    const { dir, dbPath, env } = setup();
    const positional = `hunter2-${randomBytes(8).toString("hex")}`;
    const r = await runBin(["connections", "add", "--team", "T1", "--service", "svc", positional], env, {
      stdin: "",
      cwd: dir,
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("no positional arguments");
    expect(r.stdout + r.stderr).not.toContain(positional);
    expect(existsSync(dbPath)).toBe(false);
  });
});
