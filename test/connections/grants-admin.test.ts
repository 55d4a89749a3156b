import { afterEach, describe, expect, it } from "vitest";
import { GrantsAdmin } from "../../src/connections/grants-admin.js";
import { type Harness, harness, TempDirs, threadInput } from "../support/foundation.js";

// The grants/admin service is the one writer of grant revokes and admin revokes, with their audit
// rows, for Slack and the CLI alike; an admin revoke without a working admin check is refused.

const tmp = new TempDirs();
afterEach(() => tmp.cleanup());

async function withGrant(h: Harness) {
  const conn = await h.lifecycle.create(threadInput("UOWNER", "tok-1"));
  const grant = await h.store.grants.create(
    {
      id: "grant_test00001",
      connectionId: conn.id,
      teamId: "T1",
      channelId: "C1",
      threadTs: "1700000000.000100",
      ownerUserId: "UOWNER",
      borrowerUserId: "UBORROW",
      service: "svc",
      createdAt: h.clock.now(),
    },
    [],
  );
  return { conn, grant };
}

describe("GrantsAdmin", () => {
  it("revokes a live grant once, with one grant_revoked row naming the actor", async () => {
    const h = harness(tmp);
    const { conn, grant } = await withGrant(h);
    const admin = new GrantsAdmin({ store: h.store, lifecycle: h.lifecycle, clock: h.clock });
    expect((await admin.revokeGrant(grant.id, "UBORROW")).kind).toBe("revoked");
    expect((await admin.revokeGrant(grant.id, "UBORROW")).kind).toBe("not_live");
    expect((await admin.revokeGrant("grant_missing0001", "UBORROW")).kind).toBe("not_found");
    const rows = await h.store.audit.query({ event: "grant_revoked" });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      teamId: "T1",
      channelId: "C1",
      ownerUserId: "UOWNER",
      callerUserId: "UBORROW",
      connectionId: conn.id,
      service: "svc",
      actor: "UBORROW",
    });
  });

  it("a revoke `may` refuses writes nothing", async () => {
    const h = harness(tmp);
    const { grant } = await withGrant(h);
    const admin = new GrantsAdmin({ store: h.store, lifecycle: h.lifecycle, clock: h.clock });
    expect((await admin.revokeGrant(grant.id, "USTRANGER", (g) => g.ownerUserId === "USTRANGER")).kind).toBe("refused");
    expect((await h.store.grants.get(grant.id))?.revokedAt).toBeNull();
    expect(await h.store.audit.count({ event: "grant_revoked" })).toBe(0);
  });

  it("an admin revoke ends the connection and is audited; a non-admin, or no admin check at all, is refused and audited", async () => {
    const h = harness(tmp);
    const { conn } = await withGrant(h);
    const noCheck = new GrantsAdmin({ store: h.store, lifecycle: h.lifecycle, clock: h.clock });
    expect((await noCheck.adminRevoke("T1", conn.id, "UADMIN")).kind).toBe("not_admin");
    const failing = new GrantsAdmin({
      store: h.store,
      lifecycle: h.lifecycle,
      clock: h.clock,
      admins: { isAdmin: async () => Promise.reject(new Error("slack down")) },
    });
    expect((await failing.adminRevoke("T1", conn.id, "UADMIN")).kind).toBe("not_admin");
    const admin = new GrantsAdmin({
      store: h.store,
      lifecycle: h.lifecycle,
      clock: h.clock,
      admins: { isAdmin: async (_team, u) => u === "UADMIN" },
    });
    expect((await admin.adminRevoke("T1", conn.id, "UOTHER")).kind).toBe("not_admin");
    expect((await h.store.connections.get(conn.id))?.status).toBe("active");
    expect((await admin.adminRevoke("T2", conn.id, "UADMIN")).kind).toBe("not_found");
    expect((await admin.adminRevoke("T1", conn.id, "UADMIN")).kind).toBe("revoked");
    expect((await admin.adminRevoke("T1", conn.id, "UADMIN")).kind).toBe("not_live");
    expect((await h.store.connections.get(conn.id))?.status).toBe("revoked");
    const rows = await h.store.audit.query({ event: "admin_action" });
    expect(rows.map((r) => [r.decision, r.actor])).toEqual([
      ["refused_not_admin", "UADMIN"],
      ["refused_not_admin", "UADMIN"],
      ["refused_not_admin", "UOTHER"],
      ["revoke", "UADMIN"],
      ["revoke", "UADMIN"],
    ]);
    // The grant went with the connection.
    expect(await h.store.audit.count({ event: "grant_revoked" })).toBe(1);
  });

  it("revokeOwn revokes only the owner's own connection in their workspace", async () => {
    const h = harness(tmp);
    const { conn } = await withGrant(h);
    const admin = new GrantsAdmin({ store: h.store, lifecycle: h.lifecycle, clock: h.clock });
    expect((await admin.revokeOwn("T1", conn.id, "UBORROW")).kind).toBe("not_yours");
    expect((await admin.revokeOwn("T2", conn.id, "UOWNER")).kind).toBe("not_yours");
    expect((await admin.revokeOwn("T1", undefined, "UOWNER")).kind).toBe("not_yours");
    expect((await admin.revokeOwn("T1", conn.id, "UOWNER")).kind).toBe("revoked");
    expect((await h.store.connections.get(conn.id))?.status).toBe("revoked");
  });
});
