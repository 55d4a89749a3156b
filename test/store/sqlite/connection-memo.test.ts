import { afterEach, describe, expect, it } from "vitest";
import { CONNECTION_MEMO_MAX } from "../../../src/store/sqlite/connection-memo.js";
import { dbCounts } from "../../../src/store/sqlite/db.js";
import { openSqliteStore } from "../../../src/store/sqlite/sqlite-store.js";
import type { OwnConnectionQuery } from "../../../src/store/store.js";
import { type Harness, harness, SVC_TTL_MS, TempDirs, threadInput } from "../../support/foundation.js";

// SQLite off the warm path (issue 13 item 3): the own-connection lookup and the chosen row are
// remembered, and forgotten on every change of a connection row, by this process or another
// connection to the same file. Real SQLite file, real vault, real lifecycle.

const tmp = new TempDirs();
afterEach(() => tmp.cleanup());

const THREAD = { teamId: "T1", channelId: "C1", threadTs: "1700000000.000100" };
const q = (h: Harness, o: Partial<OwnConnectionQuery> = {}): OwnConnectionQuery => ({
  thread: THREAD,
  caller: "UALICE",
  service: "svc",
  now: h.clock.now(),
  ...o,
});
const nextTurn = () => new Promise<void>((r) => setImmediate(r));
const userInput = (owner: string, token: string) => ({
  ...threadInput(owner, token),
  scope: "user" as const,
  channelId: null,
  threadTs: null,
});

/** Statements `fn` runs on the store's handle. */
async function statementsOf(h: Harness, fn: () => Promise<unknown>): Promise<number> {
  const before = dbCounts(h.store.db).statements;
  await fn();
  return dbCounts(h.store.db).statements - before;
}

describe("own-connection memo", () => {
  it("answers a warm lookup and the chosen row without reading a connection row again", async () => {
    const h = harness(tmp);
    const c = await h.lifecycle.create(userInput("UALICE", "tok-a"));
    expect((await h.store.connections.ownConnection(q(h)))?.id).toBe(c.id);
    await nextTurn();
    // Next call: one `PRAGMA data_version` per event-loop turn, no SELECT.
    const n = await statementsOf(h, async () => {
      const own = await h.store.connections.ownConnection(q(h));
      expect(own?.id).toBe(c.id);
      expect((await h.store.connections.get(c.id))?.sealed).not.toBeNull();
    });
    expect(n).toBe(1);
    // Someone without an own row is remembered as such too (their calls then run the candidates query).
    expect(await h.store.connections.ownConnection(q(h, { caller: "UBOB" }))).toBeUndefined();
    expect(await statementsOf(h, () => h.store.connections.ownConnection(q(h, { caller: "UBOB" })))).toBe(0);
  });

  it("picks the thread-scoped row first, as ownFirst does, and a new one as soon as it is created", async () => {
    const h = harness(tmp);
    const user = await h.lifecycle.create(userInput("UALICE", "tok-u"));
    expect((await h.store.connections.ownConnection(q(h)))?.id).toBe(user.id);
    const thread = await h.lifecycle.create(threadInput("UALICE", "tok-t"));
    expect((await h.store.connections.ownConnection(q(h)))?.id).toBe(thread.id);
    // Another thread of the same channel: only the user-scoped row is usable there.
    expect(
      (await h.store.connections.ownConnection(q(h, { thread: { ...THREAD, threadTs: "1700000000.000999" } })))?.id,
    ).toBe(user.id);
  });

  it("forgets a revoked, expired, needs-login or rotated row on the next call", async () => {
    const h = harness(tmp);
    const a = await h.lifecycle.create(userInput("UALICE", "tok-a"));
    const sealed = (await h.store.connections.get(a.id))!.sealed!;
    // Rotation: a new ciphertext is read, not the remembered one.
    await h.store.connections.updateSecret(
      a.id,
      { ...sealed, ciphertext: Buffer.from(sealed.ciphertext).reverse() },
      h.clock.now(),
      [],
    );
    expect((await h.store.connections.ownConnection(q(h)))!.sealed!.ciphertext.equals(sealed.ciphertext)).toBe(false);
    await h.store.connections.markNeedsLogin(a.id, h.clock.now(), []);
    expect(await h.store.connections.ownConnection(q(h))).toBeUndefined();
    expect((await h.store.connections.get(a.id))?.status).toBe("needs_login");

    const b = await h.lifecycle.create(userInput("UALICE", "tok-b"));
    expect((await h.store.connections.ownConnection(q(h)))?.id).toBe(b.id);
    await h.store.connections.end(b.id, {
      status: "revoked",
      reason: "user",
      at: h.clock.now(),
      audit: [],
      actor: "UALICE",
    });
    expect(await h.store.connections.ownConnection(q(h))).toBeUndefined();
    expect((await h.store.connections.get(b.id))?.status).toBe("revoked");

    const c = await h.lifecycle.create(userInput("UALICE", "tok-c"));
    expect((await h.store.connections.ownConnection(q(h)))?.id).toBe(c.id);
    // Past its expiry a remembered row is not used even before the reaper ends it.
    h.clock.advance(SVC_TTL_MS + 1);
    expect(await h.store.connections.ownConnection(q(h))).toBeUndefined();
    await h.store.connections.expireDue(h.clock.now());
    expect((await h.store.connections.get(c.id))?.status).toBe("expired");
  });

  it("forgets everything when another connection to the file revokes (the CLI in another process)", async () => {
    const h = harness(tmp);
    const a = await h.lifecycle.create(userInput("UALICE", "tok-a"));
    expect((await h.store.connections.ownConnection(q(h)))?.id).toBe(a.id);
    expect((await h.store.connections.get(a.id))?.status).toBe("active");
    const other = openSqliteStore(h.dbPath, () => h.clock.now()).store;
    try {
      await other.connections.end(a.id, {
        status: "revoked",
        reason: "admin",
        at: h.clock.now(),
        audit: [],
        actor: "cli:admin",
      });
    } finally {
      await other.close();
    }
    await nextTurn();
    expect(await h.store.connections.ownConnection(q(h))).toBeUndefined();
    expect((await h.store.connections.get(a.id))?.status).toBe("revoked");
  });

  it("stays bounded however many callers look up", async () => {
    const h = harness(tmp);
    await h.lifecycle.create(userInput("UALICE", "tok-a"));
    for (let i = 0; i < CONNECTION_MEMO_MAX + 500; i++)
      await h.store.connections.ownConnection(q(h, { caller: `U${i}` }));
    expect(h.store.connections.memo.size.owns).toBeLessThanOrEqual(CONNECTION_MEMO_MAX);
  });
});
