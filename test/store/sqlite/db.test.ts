import { existsSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ManualClock } from "../../../src/clock/clock.js";
import { StoreError } from "../../../src/store/errors.js";
import { openDatabase } from "../../../src/store/sqlite/db.js";
import { openSqliteStore, SqliteStore } from "../../../src/store/sqlite/sqlite-store.js";
import { holdWriteLock } from "../../support/db-lock.js";
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
    store.db
      .prepare("INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (999, 'future', 'x', 0)")
      .run();
    store.db.close();
    expect(() => openSqliteStore(file)).toThrow(expect.objectContaining({ name: "StoreError", code: "newer_schema" }));
  });
});

describe("writes while another process holds the write lock", () => {
  it("wait asynchronously (timers keep firing), commit once the lock is released, and fail as StoreError busy past the wait", async () => {
    const file = path.join(tmp.make(), "locked.db");
    const { store } = openSqliteStore(file, Date.now, { maxWaitMs: 20_000 });
    const lock = await holdWriteLock(file);
    try {
      let written = false;
      const append = store.audit
        .append([{ at: 1, event: "admin_action", actor: "cli:test" }])
        .then(() => (written = true));
      // A 10 ms timer fires on time although the write is waiting for the lock: the loop is free.
      const t0 = performance.now();
      await new Promise((r) => setTimeout(r, 10));
      const lateness = performance.now() - t0;
      expect(lateness).toBeLessThan(1_000);
      expect(written).toBe(false);
      await lock.release();
      await append;
      expect(await store.audit.count({ event: "admin_action" })).toBe(1);

      // Past the wait, the write fails with a code callers can act on, and nothing is written.
      const again = await holdWriteLock(file);
      const short = new SqliteStore(store.db, { maxWaitMs: 200 });
      try {
        await expect(
          short.grants.revoke("grant_x", "U1", 1, [{ at: 1, event: "grant_revoked" }]),
        ).rejects.toMatchObject({ name: "StoreError", code: "busy" });
      } finally {
        await again.release();
      }
      expect(await store.audit.count({ event: "grant_revoked" })).toBe(0);
    } finally {
      await lock.release();
      await store.close();
    }
  });

  it("times the wait on its clock: the write fails busy once that clock passes the wait, not before, and no real time is spent", async () => {
    const file = path.join(tmp.make(), "clocked.db");
    const { store } = openSqliteStore(file);
    const clock = new ManualClock(0);
    const clocked = new SqliteStore(store.db, { maxWaitMs: 5_000, clock });
    const lock = await holdWriteLock(file);
    try {
      let outcome: unknown;
      const write = clocked.grants.revoke("grant_x", "U1", 1, [{ at: 1, event: "grant_revoked" }]).then(
        () => (outcome = "written"),
        (err: unknown) => (outcome = err),
      );
      // The retries pause on the clock: the whole wait passes in as long as the attempts take.
      await clock.advanceAsync(4_900);
      expect(outcome).toBeUndefined();
      expect(clock.pendingTimers()).toBe(1); // the next retry's pause, armed on the store's clock
      await clock.advanceAsync(200);
      await vi.waitFor(() => expect(outcome).toMatchObject({ name: "StoreError", code: "busy" }), { timeout: 5_000 });
      await write;
      expect(String((outcome as Error).message)).toMatch(/waited 5\d\d\d ms/);
    } finally {
      await lock.release();
      await store.close();
    }
    const reopened = openSqliteStore(file).store;
    expect(await reopened.audit.count({ event: "grant_revoked" })).toBe(0);
    await reopened.close();
  });
});
