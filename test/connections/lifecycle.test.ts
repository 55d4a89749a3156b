import { afterEach, describe, expect, it } from "vitest";
import { ConnectionError } from "../../src/connections/errors.js";
import type { Connection } from "../../src/store/records.js";
import { bindingOf } from "../../src/vault/binding.js";
import { type Harness, harness, rows, SVC_TTL_MS, TempDirs, threadInput } from "../support/foundation.js";

const tmp = new TempDirs();
afterEach(() => tmp.cleanup());

function secretColumns(h: Harness, id: string) {
  return rows(h.store, "SELECT key_id, secret_nonce, secret_ct, secret_tag FROM connections WHERE id = ?", id)[0];
}

async function connectionError(p: Promise<unknown>): Promise<ConnectionError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConnectionError);
  return err as ConnectionError;
}

describe("ConnectionLifecycle.reapExpired", () => {
  it("does nothing before the TTL; after it, expires, wipes, revokes grants, audits and notifies", async () => {
    const h = harness(tmp);
    const start = h.clock.now();
    const c = await h.lifecycle.create(threadInput("U1", "tok"));
    expect(c.expiresAt).toBe(start + SVC_TTL_MS);
    const other = await h.lifecycle.create({ ...threadInput("U9", "tok9"), ttlMs: 3 * SVC_TTL_MS });
    const grant = await h.store.grants.create(
      {
        id: "grant_1",
        connectionId: c.id,
        teamId: "T1",
        channelId: "C1",
        threadTs: c.threadTs!,
        ownerUserId: "U1",
        borrowerUserId: "U2",
        service: "svc",
        createdAt: start,
      },
      [{ at: start, event: "grant_created" }],
    );
    await h.store.approvals.create(
      {
        id: "appr_1",
        nonce: "n1",
        connectionId: c.id,
        teamId: "T1",
        channelId: "C1",
        threadTs: c.threadTs!,
        ownerUserId: "U1",
        borrowerUserId: "U3",
        service: "svc",
        tool: "write_thing",
        argsHash: "h",
        status: "pending",
        createdAt: start,
        expiresAt: start + 10 * SVC_TTL_MS,
        decidedAt: null,
        decidedBy: null,
        cardChannel: null,
        cardTs: null,
      },
      [],
    );
    const ended: Connection[] = [];
    h.lifecycle.onEnded((x) => void ended.push(x));

    h.clock.advance(SVC_TTL_MS - 1);
    expect(await h.lifecycle.reapExpired()).toBe(0);
    expect(await h.store.connections.get(c.id)).toMatchObject({ status: "active", endedAt: null });
    expect(secretColumns(h, c.id)!.secret_ct).not.toBeNull();
    expect((await h.store.grants.get(grant.id))!.revokedAt).toBeNull();
    expect(await h.store.audit.count({ event: "connection_expired" })).toBe(0);
    expect(ended).toEqual([]);

    h.clock.advance(1);
    const now = h.clock.now();
    expect(await h.lifecycle.reapExpired()).toBe(1);

    const after = (await h.store.connections.get(c.id))!;
    expect(after).toMatchObject({ status: "expired", endedAt: now, endedReason: "ttl", sealed: null });
    expect(secretColumns(h, c.id)).toEqual({ key_id: null, secret_nonce: null, secret_ct: null, secret_tag: null });
    expect(() => h.vault.openCredential(after.sealed, bindingOf(after))).toThrow(
      expect.objectContaining({ code: "wiped" }),
    );
    expect(await h.store.grants.get(grant.id)).toMatchObject({ revokedAt: now, revokedBy: "reaper" });
    expect(await h.store.grants.list({ connectionId: c.id, liveOnly: true })).toEqual([]);
    expect((await h.store.approvals.get("appr_1"))!.status).toBe("expired");

    const audit = await h.store.audit.query({ connectionId: c.id, since: now });
    expect(audit.map((a) => a.event)).toEqual(["connection_expired", "grant_revoked"]);
    expect(audit[0]).toMatchObject({ at: now, teamId: "T1", ownerUserId: "U1", service: "svc", actor: "reaper" });
    expect(audit[1]).toMatchObject({
      at: now,
      ownerUserId: "U1",
      callerUserId: "U2",
      channelId: "C1",
      actor: "reaper",
    });

    expect(ended.map((x) => [x.id, x.status])).toEqual([[c.id, "expired"]]);
    // The connection with a longer TTL is untouched.
    expect((await h.store.connections.get(other.id))!.status).toBe("active");

    // A second pass finds nothing more to do.
    const auditCount = await h.store.audit.count();
    expect(await h.lifecycle.reapExpired()).toBe(0);
    expect(await h.store.audit.count()).toBe(auditCount);
    expect(ended).toHaveLength(1);
  });

  it("expires needs_login rows too, and never touches revoked ones", async () => {
    const h = harness(tmp);
    const a = await h.lifecycle.create(threadInput("U1", "a"));
    const b = await h.lifecycle.create(threadInput("U2", "b"));
    expect(
      await h.store.connections.markNeedsLogin(a.id, h.clock.now(), [
        { at: h.clock.now(), event: "connection_needs_login", connectionId: a.id },
      ]),
    ).toBe(true);
    await h.lifecycle.revoke(b.id, "U2");
    h.clock.advance(SVC_TTL_MS);
    expect(await h.lifecycle.reapExpired()).toBe(1);
    expect((await h.store.connections.get(a.id))!.status).toBe("expired");
    expect((await h.store.connections.get(b.id))!).toMatchObject({ status: "revoked", endedReason: "revoked" });
  });

  it("keeps going when a listener throws, and logs it", async () => {
    const h = harness(tmp);
    await h.lifecycle.create(threadInput("U1", "a"));
    await h.lifecycle.create(threadInput("U2", "b"));
    const seen: string[] = [];
    h.lifecycle.onEnded(() => {
      throw new Error("pool exploded");
    });
    h.lifecycle.onEnded((c) => void seen.push(c.id));
    h.clock.advance(SVC_TTL_MS);
    expect(await h.lifecycle.reapExpired()).toBe(2);
    expect(seen).toHaveLength(2);
    expect(h.log.lines.some((l) => l.includes("pool exploded"))).toBe(true);
  });
});

describe("ConnectionLifecycle.create / revoke", () => {
  it("refuses an unknown service, a disallowed scope, a missing thread and a bad credential", async () => {
    const h = harness(tmp);
    expect((await connectionError(h.lifecycle.create({ ...threadInput("U1", "t"), service: "nope" }))).code).toBe(
      "unknown_service",
    );
    // `other` allows only the default thread scope.
    const shared = {
      teamId: "T1",
      ownerUserId: null,
      service: "other",
      scope: "shared" as const,
      credential: { kind: "fields" as const, fields: { token: "t" } },
      createdBy: "cli:x",
    };
    expect((await connectionError(h.lifecycle.create(shared))).code).toBe("scope_not_allowed");
    expect((await connectionError(h.lifecycle.create({ ...threadInput("U1", "t"), threadTs: null }))).code).toBe(
      "missing_thread",
    );
    expect((await connectionError(h.lifecycle.create({ ...shared, service: "svc", ownerUserId: "U1" }))).code).toBe(
      "scope_not_allowed",
    );
    const bad = { ...threadInput("U1", "t"), credential: { kind: "fields", fields: {}, junk: true } as never };
    expect((await connectionError(h.lifecycle.create(bad))).code).toBe("invalid_credential");
    expect(await h.store.connections.list({})).toEqual([]);
    expect(await h.store.audit.count()).toBe(0);
  });

  it("seals the credential bound to the new row and audits the creation", async () => {
    const h = harness(tmp);
    const c = await h.lifecycle.create({ ...threadInput("U1", "secret-token"), label: "alice@example" });
    expect(c).toMatchObject({
      status: "active",
      teamId: "T1",
      ownerUserId: "U1",
      scope: "thread",
      channelId: "C1",
      label: "alice@example",
      createdAt: h.clock.now(),
    });
    expect(h.vault.openCredential(c.sealed, bindingOf(c))).toEqual({
      kind: "fields",
      fields: { token: "secret-token" },
    });
    const [created] = await h.store.audit.query({ connectionId: c.id });
    expect(created).toMatchObject({ event: "connection_created", decision: "thread", actor: "U1", ownerUserId: "U1" });
    expect(JSON.stringify(await h.store.audit.query({}))).not.toContain("secret-token");
  });

  it("revoke wipes the row, revokes grants, audits and notifies once", async () => {
    const h = harness(tmp);
    const c = await h.lifecycle.create(threadInput("U1", "t"));
    await h.store.grants.create(
      {
        id: "g1",
        connectionId: c.id,
        teamId: "T1",
        channelId: "C1",
        threadTs: "1.1",
        ownerUserId: "U1",
        borrowerUserId: "U2",
        service: "svc",
        createdAt: 0,
      },
      [],
    );
    const ended: string[] = [];
    h.lifecycle.onEnded((x) => void ended.push(x.id));
    h.clock.advance(10);
    const r = await h.lifecycle.revoke(c.id, "admin:U7", "admin revoke");
    expect(r).toMatchObject({ status: "revoked", endedReason: "admin revoke", endedAt: h.clock.now(), sealed: null });
    expect(secretColumns(h, c.id)).toEqual({ key_id: null, secret_nonce: null, secret_ct: null, secret_tag: null });
    expect(await h.store.grants.get("g1")).toMatchObject({ revokedAt: h.clock.now(), revokedBy: "admin:U7" });
    expect((await h.store.audit.query({ connectionId: c.id })).map((a) => [a.event, a.decision])).toEqual([
      ["connection_created", "thread"],
      ["connection_revoked", "admin revoke"],
      ["grant_revoked", "connection_revoked"],
    ]);
    expect(await h.lifecycle.revoke(c.id, "admin:U7")).toBeUndefined();
    expect(await h.lifecycle.revoke("conn_missing", "admin:U7")).toBeUndefined();
    expect(ended).toEqual([c.id]);
  });
});
