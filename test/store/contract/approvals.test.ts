import { describe, expect, it } from "vitest";
import type { Approval } from "../../../src/store/records.js";
import { threadInput } from "../../support/foundation.js";
import { backends, type StoreHarness } from "./backends.js";

const BACKENDS = backends();

async function pending(h: StoreHarness, id = "appr_1"): Promise<Approval> {
  const c = await h.lifecycle.create(threadInput("U1", "t", `1.${id}`)); // one connection per approval: a replacement would expire it
  const a: Approval = {
    id,
    nonce: `nonce-${id}`,
    connectionId: c.id,
    teamId: "T1",
    channelId: "C1",
    threadTs: "1.1",
    ownerUserId: "U1",
    borrowerUserId: "U2",
    service: "svc",
    tool: "write_thing",
    argsHash: "hash-1",
    status: "pending",
    createdAt: h.clock.now(),
    expiresAt: h.clock.now() + 60_000,
    decidedAt: null,
    decidedBy: null,
    cardChannel: null,
    cardTs: null,
  };
  await h.store.approvals.create(a, [{ at: h.clock.now(), event: "approval_requested", connectionId: c.id }]);
  return a;
}

describe.each(BACKENDS)("approvals repository on $name", (be) => {
  it("only the owner decides, only once, only before expiry", async () => {
    const h = await be.harness();
    const a = await pending(h);
    const at = h.clock.now();
    expect(
      await h.store.approvals.decide(a.id, { status: "allowed_once", by: "U2", at }, [
        { at, event: "approval_decided" },
      ]),
    ).toBe(false);
    expect(
      await h.store.approvals.decide(a.id, { status: "denied", by: "U1", at }, [
        { at, event: "approval_decided", decision: "deny" },
      ]),
    ).toBe(true);
    expect(
      await h.store.approvals.decide(a.id, { status: "allowed_once", by: "U1", at }, [
        { at, event: "approval_decided" },
      ]),
    ).toBe(false);
    expect((await h.store.approvals.get(a.id))!).toMatchObject({ status: "denied", decidedBy: "U1", decidedAt: at });
    expect(await h.store.audit.count({ event: "approval_decided" })).toBe(1);

    const late = await pending(h, "appr_2");
    const after = late.expiresAt;
    expect(await h.store.approvals.decide(late.id, { status: "allowed_once", by: "U1", at: after }, [])).toBe(false);
    expect((await h.store.approvals.getByNonce(late.nonce))!.status).toBe("pending");
  });

  it("allow-for-thread creates the grant in the same transaction; consume works once, for the approved hash only", async () => {
    const h = await be.harness();
    const a = await pending(h);
    const at = h.clock.now();
    const grant = {
      id: "grant_1",
      connectionId: a.connectionId,
      teamId: "T1",
      channelId: "C1",
      threadTs: "1.1",
      ownerUserId: "U1",
      borrowerUserId: "U2",
      service: "svc",
      createdAt: at,
    };
    expect(
      await h.store.approvals.decide(a.id, { status: "allowed_thread", by: "U1", at, grant }, [
        { at, event: "approval_decided" },
      ]),
    ).toBe(true);
    expect(
      await h.store.grants.findLive(a.connectionId, "U2", { teamId: "T1", channelId: "C1", threadTs: "1.1" }),
    ).toMatchObject({ id: "grant_1" });

    expect(await h.store.approvals.consume(a.id, "other-hash", at, [{ at, event: "call" }])).toBe(false);
    expect(await h.store.approvals.consume(a.id, "hash-1", at, [{ at, event: "call" }])).toBe(true);
    expect(await h.store.approvals.consume(a.id, "hash-1", at, [{ at, event: "call" }])).toBe(false);
    expect(await h.store.audit.count({ event: "call" })).toBe(1);
  });

  it("a failing grant insert rolls back the decision", async () => {
    const h = await be.harness();
    const a = await pending(h);
    const at = h.clock.now();
    const badGrant = {
      id: "grant_x",
      connectionId: "conn_missing",
      teamId: "T1",
      channelId: "C1",
      threadTs: "1.1",
      ownerUserId: "U1",
      borrowerUserId: "U2",
      service: "svc",
      createdAt: at,
    };
    await expect(
      h.store.approvals.decide(a.id, { status: "allowed_thread", by: "U1", at, grant: badGrant }, [
        { at, event: "approval_decided" },
      ]),
    ).rejects.toThrow(be.errors.foreignKey);
    expect((await h.store.approvals.get(a.id))!.status).toBe("pending");
    expect(await h.store.audit.count({ event: "approval_decided" })).toBe(0);
  });

  it("expirePending expires due approvals (or all at start-up) with an audit row each", async () => {
    const h = await be.harness();
    const a = await pending(h, "appr_a");
    h.clock.advance(30_000);
    const b = await pending(h, "appr_b");
    expect(await h.store.approvals.expirePending(a.expiresAt - 1)).toEqual([]);
    const expired = await h.store.approvals.expirePending(a.expiresAt);
    expect(expired.map((x) => [x.id, x.status])).toEqual([["appr_a", "expired"]]);
    expect((await h.store.approvals.expirePending(0, true)).map((x) => x.id)).toEqual([b.id]);
    expect((await h.store.audit.query({ event: "approval_decided" })).map((r) => [r.decision, r.actor])).toEqual([
      ["expired", "reaper"],
      ["expired", "startup"],
    ]);
    expect(await h.store.approvals.expire(b.id, 0, [])).toBe(false);
  });
});

describe.each(BACKENDS)("tool metadata cache on $name", (be) => {
  it("stores, replaces and validates the cached tool list", async () => {
    const h = await be.harness();
    expect(await h.store.toolMetadata.get("T1", "svc")).toBeUndefined();
    await h.store.toolMetadata.put({
      teamId: "T1",
      service: "svc",
      contentHash: "h1",
      tools: [{ name: "a" }],
      fetchedAt: 1,
    });
    await h.store.toolMetadata.put({
      teamId: "T1",
      service: "svc",
      contentHash: "h2",
      tools: [{ name: "b" }],
      fetchedAt: 2,
    });
    expect(await h.store.toolMetadata.get("T1", "svc")).toEqual({
      teamId: "T1",
      service: "svc",
      contentHash: "h2",
      tools: [{ name: "b" }],
      fetchedAt: 2,
    });
    // Keyed per team: another team's cache is a miss.
    expect(await h.store.toolMetadata.get("T2", "svc")).toBeUndefined();
    // JSON read back is validated: a non-array is treated as a cache miss.
    await h.exec('UPDATE tool_metadata SET tools_json = \'{"not":"an array"}\'');
    expect(await h.store.toolMetadata.get("T1", "svc")).toBeUndefined();
  });
});
