import { describe, expect, it } from "vitest";
import type { AuditEvent } from "../../../src/audit/event.js";
import { newId } from "../../../src/domain/ids.js";
import type { NewConnection } from "../../../src/store/records.js";
import { bindingOf } from "../../../src/vault/binding.js";
import { threadInput } from "../../support/foundation.js";
import { backends, type StoreHarness } from "./backends.js";

const BACKENDS = backends();

/** An audit event the table refuses (event is NOT NULL): it makes the audit write fail mid-transaction. */
const BROKEN_AUDIT = { at: 1, event: null } as unknown as AuditEvent;

function newConnection(h: StoreHarness): NewConnection {
  const draft = {
    id: newId("conn"),
    teamId: "T1",
    ownerUserId: "U1",
    service: "svc",
    scope: "user" as const,
    channelId: null,
    threadTs: null,
    label: null,
    createdBy: "U1",
    createdAt: h.clock.now(),
    expiresAt: h.clock.now() + 1000,
  };
  return { ...draft, sealed: h.vault.sealCredential({ kind: "fields", fields: { token: "t" } }, bindingOf(draft)) };
}

function grantFor(h: StoreHarness, connectionId: string, id = newId("grant")) {
  return {
    id,
    connectionId,
    teamId: "T1",
    channelId: "C1",
    threadTs: "1.1",
    ownerUserId: "U1",
    borrowerUserId: "U2",
    service: "svc",
    createdAt: h.clock.now(),
  };
}

describe.each(BACKENDS)("audit table on $name", (be) => {
  it("answers the event tail's filters: rows after a sequence number, and rows with given numbers", async () => {
    const h = await be.harness();
    await h.store.audit.append(["a", "b", "c"].map((actor) => ({ at: 1, event: "admin_action" as const, actor })));
    const [a, , c] = await h.store.audit.query({});
    expect((await h.store.audit.query({ afterSeq: a!.seq })).map((r) => r.actor)).toEqual(["b", "c"]);
    expect((await h.store.audit.query({ seqs: [c!.seq, a!.seq] })).map((r) => r.actor)).toEqual(["a", "c"]);
    expect(await h.store.audit.query({ seqs: [] })).toEqual([]);
  });

  it("is append-only: UPDATE and DELETE raise", async () => {
    const h = await be.harness();
    await h.store.audit.append([{ at: 1, event: "admin_action", actor: "cli:test" }]);
    await expect(h.exec("UPDATE audit SET actor = 'someone else'")).rejects.toThrow(be.errors.appendOnly);
    await expect(h.exec("DELETE FROM audit")).rejects.toThrow(be.errors.appendOnly);
    if (be.name === "postgres") await expect(h.exec("TRUNCATE audit")).rejects.toThrow(be.errors.appendOnly);
    expect(await h.rows("SELECT actor FROM audit")).toEqual([{ actor: "cli:test" }]);
  });

  it("queries by filters, in sequence order, with a limit", async () => {
    const h = await be.harness();
    await h.store.audit.append([
      { at: 100, event: "connection_created", teamId: "T1", ownerUserId: "U1", service: "svc", connectionId: "c1" },
      {
        at: 200,
        event: "call",
        teamId: "T1",
        callerUserId: "U2",
        ownerUserId: "U1",
        service: "svc",
        connectionId: "c1",
        tool: "read_thing",
      },
      {
        at: 300,
        event: "approval_decided",
        teamId: "T2",
        approverUserId: "U3",
        service: "other",
        connectionId: "c2",
        decision: "deny",
      },
    ]);
    const events = async (q: Parameters<typeof h.store.audit.query>[0]) =>
      (await h.store.audit.query(q)).map((r) => r.event);
    expect(await events({})).toEqual(["connection_created", "call", "approval_decided"]);
    expect(await events({ since: 200 })).toEqual(["call", "approval_decided"]);
    expect(await events({ until: 300 })).toEqual(["connection_created", "call"]);
    expect(await events({ teamId: "T2" })).toEqual(["approval_decided"]);
    expect(await events({ userId: "U1" })).toEqual(["connection_created", "call"]);
    expect(await events({ userId: "U3" })).toEqual(["approval_decided"]);
    expect(await events({ connectionId: "c1", event: "call" })).toEqual(["call"]);
    expect(await events({ service: "other" })).toEqual(["approval_decided"]);
    expect(await events({ limit: 1 })).toEqual(["connection_created"]);
    expect(await h.store.audit.count({ teamId: "T1" })).toBe(2);
    const [first] = await h.store.audit.query({ limit: 1 });
    expect(first).toMatchObject({ seq: 1, at: 100, teamId: "T1", tool: null, errorCode: null });
  });
});

describe.each(BACKENDS)("every state change writes its audit row in the same transaction, on $name", (be) => {
  it("connections.create: a failing audit write leaves no connection", async () => {
    const h = await be.harness();
    const c = newConnection(h);
    await expect(
      h.store.connections.create(c, [{ at: 1, event: "connection_created", connectionId: c.id }, BROKEN_AUDIT]),
    ).rejects.toThrow(be.errors.notNull);
    expect(await h.store.connections.get(c.id)).toBeUndefined();
    expect(await h.store.audit.count()).toBe(0);
  });

  it("connections.create: a failing insert leaves no audit row and does not end the live duplicate", async () => {
    const h = await be.harness();
    const existing = await h.lifecycle.create({
      teamId: "T1",
      ownerUserId: "U1",
      service: "svc",
      scope: "user",
      credential: { kind: "fields", fields: { token: "t" } },
      createdBy: "U1",
    });
    const auditBefore = await h.store.audit.count();
    // Same dedupe key (so the existing row would be replaced), but the id collides: the INSERT fails.
    const dup = { ...newConnection(h), id: existing.id };
    await expect(
      h.store.connections.create(dup, [{ at: 2, event: "connection_created", connectionId: dup.id }]),
    ).rejects.toThrow(be.errors.unique);
    expect(await h.store.audit.count()).toBe(auditBefore);
    expect(await h.store.connections.get(existing.id)).toMatchObject({ status: "active", sealed: expect.anything() });
  });

  it("connections.end: a failing audit write keeps the row live, its secret and its grants", async () => {
    const h = await be.harness();
    const c = await h.lifecycle.create(threadInput("U1", "t"));
    const g = await h.store.grants.create(grantFor(h, c.id), []);
    const before = await h.store.audit.count();
    await expect(
      h.store.connections.end(c.id, { status: "revoked", reason: "x", at: 5, actor: "U1", audit: [BROKEN_AUDIT] }),
    ).rejects.toThrow();
    expect(await h.store.connections.get(c.id)).toMatchObject({ status: "active", endedAt: null });
    expect((await h.store.connections.get(c.id))!.sealed).not.toBeNull();
    expect((await h.store.grants.get(g.id))!.revokedAt).toBeNull();
    expect(await h.store.audit.count()).toBe(before);
  });

  it("grants.create: a foreign-key violation leaves no audit row", async () => {
    const h = await be.harness();
    await expect(
      h.store.grants.create(grantFor(h, "conn_does_not_exist"), [
        { at: 1, event: "grant_created", connectionId: "conn_does_not_exist" },
      ]),
    ).rejects.toThrow(be.errors.foreignKey);
    expect(await h.store.audit.count()).toBe(0);
    expect(await h.store.grants.list({})).toEqual([]);
  });

  it("grants.create and grants.revoke: a failing audit write leaves no change", async () => {
    const h = await be.harness();
    const c = await h.lifecycle.create(threadInput("U1", "t"));
    await expect(h.store.grants.create(grantFor(h, c.id, "grant_a"), [BROKEN_AUDIT])).rejects.toThrow();
    expect(await h.store.grants.get("grant_a")).toBeUndefined();
    const g = await h.store.grants.create(grantFor(h, c.id, "grant_b"), [{ at: 1, event: "grant_created" }]);
    await expect(h.store.grants.revoke(g.id, "U1", 9, [BROKEN_AUDIT])).rejects.toThrow();
    expect((await h.store.grants.get(g.id))!.revokedAt).toBeNull();
    expect(await h.store.grants.revoke(g.id, "U1", 9, [{ at: 9, event: "grant_revoked" }])).toBe(true);
    expect(await h.store.grants.revoke(g.id, "U1", 10, [{ at: 10, event: "grant_revoked" }])).toBe(false);
    expect(await h.store.audit.count({ event: "grant_revoked" })).toBe(1);
  });

  it("reencryptAll: a failing audit write leaves every ciphertext as it was", async () => {
    const h = await be.harness();
    await h.lifecycle.create(threadInput("U1", "t"));
    const before = await h.rows("SELECT secret_nonce, secret_ct FROM connections");
    await expect(
      h.store.connections.reencryptAll((c) => h.vault.reseal(c.sealed, bindingOf(c)), BROKEN_AUDIT),
    ).rejects.toThrow();
    expect(await h.rows("SELECT secret_nonce, secret_ct FROM connections")).toEqual(before);
  });

  it("a closed database writes nothing and fails loudly", async () => {
    const h = await be.harness();
    await h.store.close();
    await expect(h.lifecycle.create(threadInput("U1", "t"))).rejects.toThrow(be.errors.closed);
    const store = await h.reopen();
    expect(await store.audit.count()).toBe(0);
    expect(await store.connections.list({})).toEqual([]);
  });
});
