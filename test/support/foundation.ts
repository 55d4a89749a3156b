// Shared set-up for the foundation tests: temp dirs, a small registry, a real SQLite store, a vault.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { ManualClock } from "../../src/clock/clock.js";
import { parseRegistry, type ServiceRegistry } from "../../src/config/registry.js";
import type { RegistryFileInput } from "../../src/config/registry-schema.js";
import { ConnectionLifecycle } from "../../src/connections/lifecycle.js";
import { memoryLogger } from "../../src/log/logger.js";
import { openSqliteStore, type SqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { KeyRing } from "../../src/vault/keyring.js";
import { Vault } from "../../src/vault/vault.js";

/** Temp directories created by a test file; call `cleanup()` in afterEach. */
export class TempDirs {
  private readonly dirs: string[] = [];
  make(prefix = "slaude-test-"): string {
    const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
    this.dirs.push(dir);
    return dir;
  }
  cleanup(): void {
    for (const d of this.dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  }
}

/** A fresh random master key, base64. */
export function newKeyB64(): string {
  return randomBytes(32).toString("base64");
}

/** A minimal valid registry document: one stdio service `svc` allowing every scope, TTL 1 h. */
export function registryDoc(): RegistryFileInput {
  return {
    services: {
      svc: {
        transport: { type: "stdio", command: "node", args: ["vendor.js"], credentialEnv: { SVC_TOKEN: "{{token}}" } },
        capture: { strategy: "paste" },
        scopes: ["thread", "user", "shared"],
        ttl: "1h",
        tools: { read_thing: ["borrowable", "read"], write_thing: ["borrowable", "write"] },
      },
      other: {
        transport: { type: "stdio", command: "node", credentialEnv: { OTHER_TOKEN: "{{token}}" } },
        capture: { strategy: "paste" },
        ttl: "2h",
      },
    },
  };
}

export const SVC_TTL_MS = 3_600_000;

/** The registry of `registryDoc()`. */
export function testRegistry(): ServiceRegistry {
  return parseRegistry(registryDoc(), "test-registry");
}

/** Writes `registryDoc()` (or `doc`) as JSON into `dir` and returns the file path. */
export function writeRegistryFile(dir: string, doc: unknown = registryDoc()): string {
  const file = path.join(dir, "services.json");
  writeFileSync(file, JSON.stringify(doc, null, 2));
  return file;
}

/** Everything a foundation test needs, over a real SQLite file in a temp dir. */
export interface Harness {
  readonly dir: string;
  readonly dbPath: string;
  readonly clock: ManualClock;
  readonly store: SqliteStore;
  readonly keyB64: string;
  readonly ring: KeyRing;
  readonly vault: Vault;
  readonly registry: ServiceRegistry;
  readonly log: ReturnType<typeof memoryLogger>;
  readonly lifecycle: ConnectionLifecycle;
}

/** Opens a migrated store in a new temp dir with a random key and a ManualClock. */
export function harness(tmp: TempDirs, keyB64: string = newKeyB64()): Harness {
  const dir = tmp.make();
  const dbPath = path.join(dir, "slaude.db");
  const clock = new ManualClock();
  const { store } = openSqliteStore(dbPath, () => clock.now());
  const ring = KeyRing.fromBase64(keyB64);
  const vault = new Vault(ring);
  const registry = testRegistry();
  const log = memoryLogger();
  const lifecycle = new ConnectionLifecycle({ store, vault, registry, clock, log });
  return { dir, dbPath, clock, store, keyB64, ring, vault, registry, log, lifecycle };
}

/** A thread-scoped connection input for `svc`. */
export function threadInput(owner: string, token: string, thread = "1700000000.000100") {
  return {
    teamId: "T1",
    ownerUserId: owner,
    service: "svc",
    scope: "thread" as const,
    channelId: "C1",
    threadTs: thread,
    credential: { kind: "fields" as const, fields: { token } },
    createdBy: owner,
  };
}

/** Reads a table's rows with raw SQL. */
export function rows<T = Record<string, unknown>>(store: SqliteStore, sql: string, ...params: unknown[]): T[] {
  return store.db.prepare(sql).all(...params) as T[];
}
