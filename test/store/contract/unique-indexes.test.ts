import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { threadInput } from "../../support/foundation.js";
import { backends, type StoreHarness } from "./backends.js";

const BACKENDS = backends();

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
async function insert(h: StoreHarness, r: Row): Promise<string> {
  const id = `conn_${++seq}`;
  const live = r.status === "active" || r.status === "needs_login";
  await h.exec(
    `INSERT INTO connections (id, team_id, owner_user_id, service, scope, channel_id, thread_ts, status, key_id, secret_nonce, secret_ct, secret_tag,
     created_by, created_at, updated_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'test', 0, 0, 1)`,
    id,
    r.team_id,
    r.owner_user_id,
    r.service,
    r.scope,
    r.channel_id,
    r.thread_ts,
    r.status,
    live ? "k_test" : null,
    live ? randomBytes(12) : null,
    live ? randomBytes(8) : null,
    live ? randomBytes(16) : null,
  );
  return id;
}

const thread: Row = {
  team_id: "T1",
  owner_user_id: "U1",
  service: "svc",
  scope: "thread",
  channel_id: "C1",
  thread_ts: "1.1",
  status: "active",
};
const user: Row = {
  team_id: "T1",
  owner_user_id: "U1",
  service: "svc",
  scope: "user",
  channel_id: null,
  thread_ts: null,
  status: "active",
};
const shared: Row = {
  team_id: "T1",
  owner_user_id: null,
  service: "svc",
  scope: "shared",
  channel_id: null,
  thread_ts: null,
  status: "active",
};

describe.each(BACKENDS)("partial unique indexes on live connections, $name", (be) => {
  it("reject two live thread rows with the same team, owner, service, channel and thread", async () => {
    const h = await be.harness();
    await insert(h, thread);
    await expect(insert(h, thread)).rejects.toThrow(be.errors.unique);
    await expect(insert(h, { ...thread, status: "needs_login" })).rejects.toThrow(be.errors.unique);
    // Any differing key part is a different connection.
    await insert(h, { ...thread, thread_ts: "1.2" });
    await insert(h, { ...thread, channel_id: "C2" });
    await insert(h, { ...thread, owner_user_id: "U2" });
    await insert(h, { ...thread, service: "other" });
    await insert(h, { ...thread, team_id: "T2" });
  });

  it("reject two live user rows for the same owner and service", async () => {
    const h = await be.harness();
    await insert(h, user);
    await expect(insert(h, user)).rejects.toThrow(be.errors.unique);
    await insert(h, { ...user, owner_user_id: "U2" });
    // A thread connection of the same owner is another scope, not a duplicate.
    await insert(h, thread);
  });

  it("reject two live shared rows for the same service, although owner is NULL", async () => {
    const h = await be.harness();
    await insert(h, shared);
    // A plain UNIQUE (team, owner, service) would accept this: NULLs are distinct in SQLite and PostgreSQL.
    await expect(insert(h, shared)).rejects.toThrow(be.errors.unique);
    await expect(insert(h, { ...shared, status: "needs_login" })).rejects.toThrow(be.errors.unique);
    await insert(h, { ...shared, service: "other" });
    await insert(h, { ...shared, team_id: "T2" });
  });

  it("let a revoked or expired row coexist with a new live row", async () => {
    const h = await be.harness();
    for (const base of [thread, user, shared]) {
      await insert(h, { ...base, status: "revoked" });
      await insert(h, { ...base, status: "expired" });
      await insert(h, { ...base, status: "revoked" });
      const live = await insert(h, base);
      // Ending the live row frees the key for its replacement.
      await h.exec(
        "UPDATE connections SET status = 'revoked', key_id = NULL, secret_nonce = NULL, secret_ct = NULL, secret_tag = NULL WHERE id = ?",
        live,
      );
      await insert(h, base);
      await expect(insert(h, base)).rejects.toThrow(be.errors.unique);
    }
  });

  it("enforce the scope invariants with CHECK constraints", async () => {
    const h = await be.harness();
    await expect(insert(h, { ...shared, owner_user_id: "U1" })).rejects.toThrow(be.errors.check);
    await expect(insert(h, { ...user, owner_user_id: null })).rejects.toThrow(be.errors.check);
    await expect(insert(h, { ...thread, thread_ts: null })).rejects.toThrow(be.errors.check);
    await expect(insert(h, { ...user, channel_id: "C1", thread_ts: "1.1" })).rejects.toThrow(be.errors.check);
    // An ended row may not keep its ciphertext.
    const b = be.blob("00");
    await expect(
      h.exec(
        `INSERT INTO connections (id, team_id, owner_user_id, service, scope, status, key_id, secret_nonce, secret_ct, secret_tag, created_by, created_at, updated_at, expires_at)
         VALUES ('conn_x', 'T1', NULL, 'svc', 'shared', 'revoked', 'k', ${b}, ${b}, ${b}, 't', 0, 0, 1)`,
      ),
    ).rejects.toThrow(be.errors.check);
  });
});

describe.each(BACKENDS)("connections.create replaces a live duplicate, $name", (be) => {
  it.each(["thread", "user", "shared"] as const)(
    "scope %s: the old row is revoked as 'replaced', wiped, and its grants revoked",
    async (scope) => {
      const h = await be.harness();
      const input =
        scope === "thread"
          ? threadInput("U1", "first")
          : {
              teamId: "T1",
              ownerUserId: scope === "shared" ? null : "U1",
              service: "svc",
              scope,
              credential: { kind: "fields" as const, fields: { token: "first" } },
              createdBy: "U1",
            };
      const first = await h.lifecycle.create(input);
      const g = await h.store.grants.create(
        {
          id: "grant_1",
          connectionId: first.id,
          teamId: "T1",
          channelId: "C1",
          threadTs: "1.1",
          ownerUserId: "U1",
          borrowerUserId: "U2",
          service: "svc",
          createdAt: h.clock.now(),
        },
        [],
      );
      const ended: string[] = [];
      h.lifecycle.onEnded((c) => void ended.push(c.id));
      h.clock.advance(5_000);
      const second = await h.lifecycle.create({
        ...input,
        credential: { kind: "fields", fields: { token: "second" } },
      });

      const old = (await h.store.connections.get(first.id))!;
      expect(old).toMatchObject({ status: "revoked", endedReason: "replaced", endedAt: h.clock.now(), sealed: null });
      const raw = (
        await h.rows("SELECT key_id, secret_nonce, secret_ct, secret_tag FROM connections WHERE id = ?", first.id)
      )[0];
      expect(raw).toEqual({ key_id: null, secret_nonce: null, secret_ct: null, secret_tag: null });
      expect((await h.store.grants.get(g.id))!.revokedAt).toBe(h.clock.now());
      expect(ended).toEqual([first.id]);

      const live = await h.store.connections.list({
        teamId: "T1",
        service: "svc",
        statuses: ["active", "needs_login"],
      });
      expect(live.map((c) => c.id)).toEqual([second.id]);
      expect((await h.store.audit.query({ connectionId: first.id })).map((a) => a.event)).toEqual([
        "connection_created",
        "connection_replaced",
        "grant_revoked",
      ]);
    },
  );
});
