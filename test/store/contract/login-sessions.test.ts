import { describe, expect, it } from "vitest";
import type { StoreHarness } from "./backends.js";
import { backends } from "./backends.js";

// Login sessions on both adapters: a link opens once, for one viewer and while live; a flow ends
// once; the reaper expires due flows (not ended ones), oldest first, with one audit row each.

const BACKENDS = backends();

async function minted(h: StoreHarness, id: string, expiresAt: number) {
  const createdAt = h.clock.now();
  await h.store.loginSessions.create(
    {
      id,
      tokenHash: `hash_${id}`,
      teamId: "T1",
      userId: "U1",
      service: "github",
      scope: "thread",
      channelId: "C1",
      threadTs: "1.1",
      createdAt,
      expiresAt,
    },
    [{ at: createdAt, event: "login_started", teamId: "T1", callerUserId: "U1", service: "github" }],
  );
}

describe.each(BACKENDS)("login session repository on $name", (be) => {
  it("a link opens once, while live, for one viewer; by id and by token hash alike", async () => {
    const h = await be.harness();
    const t0 = h.clock.now();
    await minted(h, "ls_a", t0 + 1_000);
    await minted(h, "ls_b", t0 + 1_000);
    expect(await h.store.loginSessions.open("hash_missing", "v1", t0, t0 + 5_000, [])).toBeUndefined();
    const opened = await h.store.loginSessions.open("hash_ls_a", "v1", t0 + 10, t0 + 5_000, []);
    expect(opened).toMatchObject({ id: "ls_a", status: "opened", openedAt: t0 + 10, viewerHash: "v1" });
    expect(opened!.expiresAt).toBe(t0 + 5_000);
    expect(await h.store.loginSessions.open("hash_ls_a", "v2", t0 + 20, t0 + 5_000, [])).toBeUndefined();
    expect(await h.store.loginSessions.get("ls_a")).toEqual(opened);
    expect(await h.store.loginSessions.getByTokenHash("hash_ls_a")).toEqual(opened);
    // A minted link past its expiry does not open.
    expect(await h.store.loginSessions.open("hash_ls_b", "v1", t0 + 1_000, t0 + 5_000, [])).toBeUndefined();
    expect((await h.store.loginSessions.get("ls_b"))!.status).toBe("minted");
  });

  it("a flow ends once, with its connection, audited once", async () => {
    const h = await be.harness();
    const t0 = h.clock.now();
    await minted(h, "ls_a", t0 + 1_000);
    const ev = [{ at: t0 + 5, event: "login_completed" as const, teamId: "T1", callerUserId: "U1" }];
    expect(await h.store.loginSessions.end("ls_a", "cancelled", t0 + 5, null, ev)).toBe(true);
    expect(await h.store.loginSessions.end("ls_a", "completed", t0 + 6, null, ev)).toBe(false);
    expect(await h.store.loginSessions.end("ls_missing", "failed", t0 + 6, null, ev)).toBe(false);
    expect(await h.store.loginSessions.get("ls_a")).toMatchObject({ status: "cancelled", endedAt: t0 + 5 });
    expect(await h.store.audit.count({ event: "login_completed" })).toBe(1);
  });

  it("expireDue expires due flows only, oldest first, one reaper audit row each", async () => {
    const h = await be.harness();
    const t0 = h.clock.now();
    await minted(h, "ls_b", t0 + 100);
    h.clock.advance(10);
    await minted(h, "ls_a", t0 + 100);
    await minted(h, "ls_ended", t0 + 100);
    await minted(h, "ls_later", t0 + 10_000);
    await h.store.loginSessions.open("hash_ls_a", "v1", t0 + 20, t0 + 100, []);
    await h.store.loginSessions.end("ls_ended", "failed", t0 + 20, null, []);
    expect(await h.store.loginSessions.expireDue(t0 + 99)).toEqual([]);
    const expired = await h.store.loginSessions.expireDue(t0 + 100);
    expect(expired.map((s) => [s.id, s.status, s.endedAt])).toEqual([
      ["ls_b", "expired", t0 + 100],
      ["ls_a", "expired", t0 + 100],
    ]);
    expect(await h.store.loginSessions.expireDue(t0 + 100)).toEqual([]);
    expect(
      (await h.store.audit.query({ event: "login_refused" })).map((r) => [r.decision, r.actor, r.callerUserId]),
    ).toEqual([
      ["expired", "reaper", "U1"],
      ["expired", "reaper", "U1"],
    ]);
    expect((await h.store.loginSessions.get("ls_later"))!.status).toBe("minted");
  });
});
