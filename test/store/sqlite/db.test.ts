import { existsSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { StoreError } from "../../../src/store/errors.js";
import { openDatabase } from "../../../src/store/sqlite/db.js";
import { openSqliteStore } from "../../../src/store/sqlite/sqlite-store.js";
import { TempDirs } from "../../support/foundation.js";

const tmp = new TempDirs();
afterEach(() => tmp.cleanup());

describe("openDatabase / openSqliteStore", () => {
  it("creates an owner-only file (and WAL/SHM) with WAL, foreign keys and secure delete on", async () => {
    const file = path.join(tmp.make(), "nested", "dir", "slaude.db");
    const { store, migrations } = openSqliteStore(file);
    try {
      expect(migrations.applied).toContain(1);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
      await store.audit.append([{ at: 1, event: "admin_action" }]);
      for (const side of [`${file}-wal`, `${file}-shm`]) {
        if (existsSync(side)) expect(statSync(side).mode & 0o777, side).toBe(0o600);
      }
      expect(store.db.pragma("journal_mode", { simple: true })).toBe("wal");
      expect(store.db.pragma("foreign_keys", { simple: true })).toBe(1);
      expect(store.db.pragma("secure_delete", { simple: true })).toBe(1);
      expect(await store.ping()).toBe(true);
    } finally {
      await store.close();
    }
    expect(await store.ping()).toBe(false);
    // close() twice is harmless.
    await store.close();
  });

  it("reports an unopenable file as StoreError open_failed naming the file", () => {
    const dir = tmp.make();
    const blocker = path.join(dir, "not-a-dir");
    writeFileSync(blocker, "x");
    const file = path.join(blocker, "slaude.db");
    let err: unknown;
    try {
      openDatabase(file);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(StoreError);
    expect((err as StoreError).code).toBe("open_failed");
    expect((err as StoreError).message).toContain(file);
  });

  it("refuses to open a missing file read-only instead of creating it", () => {
    const file = path.join(tmp.make(), "missing.db");
    expect(() => openDatabase(file, { readonly: true })).toThrow(StoreError);
    expect(existsSync(file)).toBe(false);
  });

  it("closes the database when migrations fail on open", () => {
    const file = path.join(tmp.make(), "future.db");
    const { store } = openSqliteStore(file);
    store.db.prepare("INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (999, 'future', 'x', 0)").run();
    store.db.close();
    expect(() => openSqliteStore(file)).toThrow(expect.objectContaining({ name: "StoreError", code: "newer_schema" }));
  });
});
