import { randomBytes } from "node:crypto";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openDatabase, type Db } from "../../../src/store/sqlite/db.js";
import { migrate } from "../../../src/store/sqlite/migrator.js";
import { harness, rows, TempDirs, threadInput } from "../../support/foundation.js";

const tmp = new TempDirs();
const opened: Db[] = [];
afterEach(async () => {
  for (const db of opened.splice(0)) if (db.open) db.close();
  tmp.cleanup();
});

function migratedDb(): Db {
  const db = openDatabase(path.join(tmp.make(), "u.db"));
  opened.push(db);
  migrate(db);
  return db;
}

let seq = 0;
type Row = {
  team_id: string;
  owner_user_id: string | null;
  service: string;
  scope: "thread" | "user" | "shared";
  channel_id: string | null;
  thread_ts: string | null;
  status: "active" | "needs_login" | "revoked" | "expired";
};

/** Inserts a connection row with raw SQL; live rows get a (fake) ciphertext, ended rows none. */
function insert(db: Db, r: Row): string {
  const id = `conn_${++seq}`;
  const live = r.status === "active" || r.status === "needs_login";
  db.prepare(
    `INSERT INTO connections (id, team_id, owner_user_id, service, scope, channel_id, thread_ts, status, key_id, secret_nonce, secret_ct, secret_tag,
     created_by, created_at, updated_at, expires_at) VALUES (@id, @team_id, @owner_user_id, @service, @scope, @channel_id, @thread_ts, @status,
     @key_id, @nonce, @ct, @tag, 'test', 0, 0, 1)`,
  ).run({ id, ...r, key_id: live ? "k_test" : null, nonce: live ? randomBytes(12) : null, ct: live ? randomBytes(8) : null, tag: live ? randomBytes(16) : null });
  return id;
}

const thread: Row = { team_id: "T1", owner_user_id: "U1", service: "svc", scope: "thread", channel_id: "C1", thread_ts: "1.1", status: "active" };
const user: Row = { team_id: "T1", owner_user_id: "U1", service: "svc", scope: "user", channel_id: null, thread_ts: null, status: "active" };
const shared: Row = { team_id: "T1", owner_user_id: null, service: "svc", scope: "shared", channel_id: null, thread_ts: null, status: "active" };

const UNIQUE = /UNIQUE constraint failed/;

describe("partial unique indexes on live connections", () => {
  it("reject two live thread rows with the same team, owner, service, channel and thread", () => {
    const db = migratedDb();
    insert(db, thread);
    expect(() => insert(db, thread)).toThrow(UNIQUE);
    expect(() => insert(db, { ...thread, status: "needs_login" })).toThrow(UNIQUE);
    // Any differing key part is a different connection.
    insert(db, { ...thread, thread_ts: "1.2" });
    insert(db, { ...thread, channel_id: "C2" });
    insert(db, { ...thread, owner_user_id: "U2" });
    insert(db, { ...thread, service: "other" });
    insert(db, { ...thread, team_id: "T2" });
  });

  it("reject two live user rows for the same owner and service", () => {
    const db = migratedDb();
    insert(db, user);
    expect(() => insert(db, user)).toThrow(UNIQUE);
    insert(db, { ...user, owner_user_id: "U2" });
    // A thread connection of the same owner is another scope, not a duplicate.
    insert(db, thread);
  });

  it("reject two live shared rows for the same service, although owner is NULL", () => {
    const db = migratedDb();
    insert(db, shared);
    // A plain UNIQUE (team, owner, service) would accept this: NULLs are distinct in SQLite.
    expect(() => insert(db, shared)).toThrow(UNIQUE);
    expect(() => insert(db, { ...shared, status: "needs_login" })).toThrow(UNIQUE);
    insert(db, { ...shared, service: "other" });
    insert(db, { ...shared, team_id: "T2" });
  });

  it("let a revoked or expired row coexist with a new live row", () => {
    const db = migratedDb();
    for (const base of [thread, user, shared]) {
      insert(db, { ...base, status: "revoked" });
      insert(db, { ...base, status: "expired" });
      insert(db, { ...base, status: "revoked" });
      const live = insert(db, base);
      // Ending the live row frees the key for its replacement.
      db.prepare("UPDATE connections SET status = 'revoked', key_id = NULL, secret_nonce = NULL, secret_ct = NULL, secret_tag = NULL WHERE id = ?").run(live);
      insert(db, base);
      expect(() => insert(db, base)).toThrow(UNIQUE);
    }
  });

  it("enforce the scope invariants with CHECK constraints", () => {
    const db = migratedDb();
    expect(() => insert(db, { ...shared, owner_user_id: "U1" })).toThrow(/CHECK/);
    expect(() => insert(db, { ...user, owner_user_id: null })).toThrow(/CHECK/);
    expect(() => insert(db, { ...thread, thread_ts: null })).toThrow(/CHECK/);
    expect(() => insert(db, { ...user, channel_id: "C1", thread_ts: "1.1" })).toThrow(/CHECK/);
    // An ended row may not keep its ciphertext.
    expect(() =>
      db
        .prepare(
          `INSERT INTO connections (id, team_id, owner_user_id, service, scope, status, key_id, secret_nonce, secret_ct, secret_tag, created_by, created_at, updated_at, expires_at)
           VALUES ('conn_x', 'T1', NULL, 'svc', 'shared', 'revoked', 'k', x'00', x'00', x'00', 't', 0, 0, 1)`,
        )
        .run(),
    ).toThrow(/CHECK/);
  });
});

describe("connections.create replaces a live duplicate", () => {
  it.each(["thread", "user", "shared"] as const)("scope %s: the old row is revoked as 'replaced', wiped, and its grants revoked", async (scope) => {
    const h = harness(tmp);
    const input =
      scope === "thread"
        ? threadInput("U1", "first")
        : { teamId: "T1", ownerUserId: scope === "shared" ? null : "U1", service: "svc", scope, credential: { kind: "fields" as const, fields: { token: "first" } }, createdBy: "U1" };
    const first = await h.lifecycle.create(input);
    const g = await h.store.grants.create(
      { id: "grant_1", connectionId: first.id, teamId: "T1", channelId: "C1", threadTs: "1.1", ownerUserId: "U1", borrowerUserId: "U2", service: "svc", createdAt: h.clock.now() },
      [],
    );
    const ended: string[] = [];
    h.lifecycle.onEnded((c) => void ended.push(c.id));
    h.clock.advance(5_000);
    const second = await h.lifecycle.create({ ...input, credential: { kind: "fields", fields: { token: "second" } } });

    const old = (await h.store.connections.get(first.id))!;
    expect(old).toMatchObject({ status: "revoked", endedReason: "replaced", endedAt: h.clock.now(), sealed: null });
    const raw = rows(h.store, "SELECT key_id, secret_nonce, secret_ct, secret_tag FROM connections WHERE id = ?", first.id)[0];
    expect(raw).toEqual({ key_id: null, secret_nonce: null, secret_ct: null, secret_tag: null });
    expect((await h.store.grants.get(g.id))!.revokedAt).toBe(h.clock.now());
    expect(ended).toEqual([first.id]);

    const live = await h.store.connections.list({ teamId: "T1", service: "svc", statuses: ["active", "needs_login"] });
    expect(live.map((c) => c.id)).toEqual([second.id]);
    expect((await h.store.audit.query({ connectionId: first.id })).map((a) => a.event)).toEqual(["connection_created", "connection_replaced", "grant_revoked"]);
  });
});
