import { describe, expect, it } from "vitest";
import { ConnectionLifecycle } from "../../../src/connections/lifecycle.js";
import { memoryLogger } from "../../../src/log/logger.js";
import type { Approval } from "../../../src/store/records.js";
import { threadInput } from "../../support/foundation.js";
import { backends } from "./backends.js";

// Two stores on one database stand for two processes (SQLite) or two replicas (PostgreSQL): the
// same click delivered to both at once is applied once, and a connection key is never live twice.

const BACKENDS = backends();

describe.each(BACKENDS)("two writers on one database, $name", (be) => {
  it("the same decision and consumption sent to two stores at once apply once: one decision, one grant, one consumption", async () => {
    const h = await be.harness();
    const other = await h.reopen();
    const c = await h.lifecycle.create(threadInput("U1", "t"));
    const at = h.clock.now();
    const a: Approval = {
      id: "appr_1",
      nonce: "n1",
      connectionId: c.id,
      teamId: "T1",
      channelId: "C1",
      threadTs: "1.1",
      ownerUserId: "U1",
      borrowerUserId: "U2",
      service: "svc",
      tool: "write_thing",
      argsHash: "h",
      status: "pending",
      createdAt: at,
      expiresAt: at + 60_000,
      decidedAt: null,
      decidedBy: null,
      cardChannel: null,
      cardTs: null,
    };
    await h.store.approvals.create(a, []);
    const grant = (id: string) => ({
      id,
      connectionId: c.id,
      teamId: "T1",
      channelId: "C1",
      threadTs: "1.1",
      ownerUserId: "U1",
      borrowerUserId: "U2",
      service: "svc",
      createdAt: at,
    });
    const decisions = await Promise.all(
      [h.store, other, h.store, other].map((s, i) =>
        s.approvals.decide(a.id, { status: "allowed_thread", by: "U1", at, grant: grant(`grant_${i}`) }, [
          { at, event: "approval_decided" },
        ]),
      ),
    );
    expect(decisions.filter(Boolean)).toHaveLength(1);
    expect(await h.store.grants.list({ liveOnly: true })).toHaveLength(1);
    const consumed = await Promise.all(
      [h.store, other, h.store, other].map((s) => s.approvals.consume(a.id, "h", at, [{ at, event: "call" }])),
    );
    expect(consumed.filter(Boolean)).toHaveLength(1);
    expect(await h.store.audit.count({ event: "approval_decided" })).toBe(1);
    expect(await h.store.audit.count({ event: "call" })).toBe(1);
  });

  it("creating the same connection key from two stores at once leaves exactly one live row; the other is replaced", async () => {
    const h = await be.harness();
    const other = await h.reopen();
    const otherLifecycle = new ConnectionLifecycle({
      store: other,
      vault: h.vault,
      registry: h.registry,
      clock: h.clock,
      log: memoryLogger(),
    });
    const input = {
      teamId: "T1",
      ownerUserId: "U1",
      service: "svc",
      scope: "user" as const,
      credential: { kind: "fields" as const, fields: { token: "t" } },
      createdBy: "U1",
    };
    const made = await Promise.all([
      h.lifecycle.create(input),
      otherLifecycle.create(input),
      h.lifecycle.create(input),
      otherLifecycle.create(input),
    ]);
    expect(new Set(made.map((c) => c.id)).size).toBe(4);
    const live = await h.store.connections.list({ teamId: "T1", statuses: ["active", "needs_login"] });
    expect(live).toHaveLength(1);
    expect(await h.store.audit.count({ event: "connection_replaced" })).toBe(3);
  });

  it("a revoke and an expiry racing on two stores end the connection once", async () => {
    const h = await be.harness();
    const other = await h.reopen();
    const c = await h.lifecycle.create(threadInput("U1", "t"));
    const due = c.expiresAt;
    const [ended, expired] = await Promise.all([
      h.store.connections.end(c.id, {
        status: "revoked",
        reason: "x",
        at: due,
        actor: "U1",
        audit: [{ at: due, event: "connection_revoked", connectionId: c.id }],
      }),
      other.connections.expireDue(due),
    ]);
    expect(Number(ended !== undefined) + expired.length).toBe(1);
    expect(
      (await h.store.audit.count({ event: "connection_revoked" })) +
        (await h.store.audit.count({ event: "connection_expired" })),
    ).toBe(1);
  });

  it("ownConnection prefers the thread row, skips expired rows, and a revoke through the other store wins on the next lookup", async () => {
    const h = await be.harness();
    const other = await h.reopen();
    const thread = { teamId: "T1", channelId: "C1", threadTs: "1700000000.000100" };
    const user = await h.lifecycle.create({
      teamId: "T1",
      ownerUserId: "U1",
      service: "svc",
      scope: "user",
      credential: { kind: "fields", fields: { token: "u" } },
      createdBy: "U1",
    });
    const here = await h.lifecycle.create(threadInput("U1", "t"));
    const q = { thread, caller: "U1", service: "svc", now: h.clock.now() };
    expect((await h.store.connections.ownConnection(q))?.id).toBe(here.id);
    expect((await h.store.connections.ownConnection(q))?.sealed).not.toBeNull();
    await other.connections.end(here.id, { status: "revoked", reason: "x", at: h.clock.now(), actor: "U1", audit: [] });
    // The next call arrives as a new event (SQLite's memo re-reads data_version once per event-loop turn).
    await new Promise((r) => setImmediate(r));
    expect((await h.store.connections.ownConnection(q))?.id).toBe(user.id);
    expect(await h.store.connections.ownConnection({ ...q, now: user.expiresAt })).toBeUndefined();
  });
});
