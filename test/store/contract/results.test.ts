import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { StoredResult } from "../../../src/store/result-repo.js";
import { backends } from "./backends.js";

// The result store's repository (sealed full results of truncated calls): per-team byte cap with
// oldest-first eviction audited in the same transaction, expiry, and bytes kept as sealed.

const BACKENDS = backends();

const result = (id: string, teamId: string, sizeBytes: number, createdAt: number): StoredResult => ({
  id,
  teamId,
  channelId: "C1",
  threadTs: "1.1",
  ownerUserId: "U1",
  callId: `call_${id}`,
  service: "svc",
  tool: "read_thing",
  sizeBytes,
  createdAt,
  expiresAt: createdAt + 1000,
  sealed: { keyId: "k1", nonce: randomBytes(12), ciphertext: randomBytes(sizeBytes % 64), tag: randomBytes(16) },
});

describe.each(BACKENDS)("results repository on $name", (be) => {
  it("keeps a team under its cap by evicting its oldest first, audited with the put; other teams untouched; over the cap is refused", async () => {
    const h = await be.harness();
    const evictedAudit = (ev: readonly { id: string }[]) =>
      ev.map((e) => ({ at: 0, event: "admin_action" as const, actor: `evicted:${e.id}` }));
    expect(await h.store.results.put(result("r1", "T1", 40, 1), 100, evictedAudit)).toEqual({
      stored: true,
      evicted: [],
    });
    await h.store.results.put(result("r2", "T1", 40, 2), 100, evictedAudit);
    await h.store.results.put(result("o1", "T2", 90, 2), 100, evictedAudit);
    const third = await h.store.results.put(result("r3", "T1", 40, 3), 100, evictedAudit);
    expect(third.stored && third.evicted.map((e) => e.id)).toEqual(["r1"]);
    expect(await h.store.results.get("r1")).toBeUndefined();
    expect(await h.store.results.teamBytes("T1", 3)).toBe(80);
    expect(await h.store.results.teamBytes("T2", 3)).toBe(90);
    expect(await h.store.results.put(result("big", "T1", 101, 4), 100, evictedAudit)).toEqual({ stored: false });
    expect((await h.store.audit.query({})).map((a) => a.actor)).toEqual(["evicted:r1"]);
    const back = (await h.store.results.get("r3"))!;
    const r3 = result("r3", "T1", 40, 3);
    expect({ ...back, sealed: undefined }).toEqual({ ...r3, sealed: undefined });
    expect(back.sealed.keyId).toBe("k1");
  });

  it("deleteExpired removes rows at or past their expiry and says how many", async () => {
    const h = await be.harness();
    await h.store.results.put(result("a", "T1", 10, 0), 100, () => []);
    await h.store.results.put(result("b", "T1", 10, 500), 100, () => []);
    expect(await h.store.results.deleteExpired(1000)).toBe(1);
    expect(await h.store.results.get("a")).toBeUndefined();
    expect(await h.store.results.teamBytes("T1", 1000)).toBe(10);
  });
});
