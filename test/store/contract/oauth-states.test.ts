import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { DEFAULT_MAX_LIVE_OAUTH_STATES, oauthStateHash } from "../../../src/store/installation-rows.js";
import { backends } from "./backends.js";

// The OAuth install state store on both adapters: states kept only as hashes, taken once (also
// when two stores race for one), never after expiry, swept, and capped in number oldest-first.

const BACKENDS = backends();
const state = () => randomBytes(24).toString("base64url");

describe.each(BACKENDS)("OAuth state repository on $name", (be) => {
  it("a state is taken once, by its hash; the raw state is never stored", async () => {
    const h = await be.harness();
    const s = state();
    expect(await h.store.oauthStates.put(oauthStateHash(s), '{"scopes":["chat:write"]}', 10_000, 1_000)).toBe(0);
    const rows = await h.rows<{ state_hash: string; payload: string }>("SELECT state_hash, payload FROM oauth_states");
    expect(rows).toEqual([{ state_hash: oauthStateHash(s), payload: '{"scopes":["chat:write"]}' }]);
    expect(JSON.stringify(rows)).not.toContain(s);
    expect(await h.store.oauthStates.take(s, 2_000)).toBeUndefined();
    expect(await h.store.oauthStates.take(oauthStateHash(state()), 2_000)).toBeUndefined();
    expect(await h.store.oauthStates.take(oauthStateHash(s), 2_000)).toBe('{"scopes":["chat:write"]}');
    expect(await h.store.oauthStates.take(oauthStateHash(s), 2_001)).toBeUndefined();
    expect(await h.rows("SELECT state_hash FROM oauth_states")).toEqual([]);
  });

  it("an expired state is not returned (and is gone); expireDue sweeps the rest", async () => {
    const h = await be.harness();
    const [a, b, c] = [state(), state(), state()];
    await h.store.oauthStates.put(oauthStateHash(a), "a", 5_000, 1_000);
    await h.store.oauthStates.put(oauthStateHash(b), "b", 6_000, 1_000);
    await h.store.oauthStates.put(oauthStateHash(c), "c", 9_000, 1_000);
    expect(await h.store.oauthStates.take(oauthStateHash(a), 5_000)).toBeUndefined();
    expect(await h.rows("SELECT state_hash FROM oauth_states WHERE state_hash = ?", oauthStateHash(a))).toEqual([]);
    expect(await h.store.oauthStates.expireDue(6_000)).toBe(1);
    expect(await h.store.oauthStates.expireDue(6_000)).toBe(0);
    expect(await h.store.oauthStates.take(oauthStateHash(c), 8_999)).toBe("c");
  });

  it("keeps at most maxLive live states, dropping expired ones first and then the oldest", async () => {
    const h = await be.harness();
    const states = Array.from({ length: 6 }, state);
    // One already expired by the time the others arrive: it goes before any live one.
    await h.store.oauthStates.put(oauthStateHash(states[0]!), "s0", 1_500, 1_000);
    const evicted: number[] = [];
    for (let k = 1; k < 6; k++)
      evicted.push(await h.store.oauthStates.put(oauthStateHash(states[k]!), `s${k}`, 100_000, 2_000 + k, 3));
    expect(evicted).toEqual([0, 0, 0, 1, 1]);
    expect((await h.rows<{ n: number }>("SELECT count(*) AS n FROM oauth_states"))[0]!.n).toBe(3);
    const taken = [];
    for (const s of states) taken.push(await h.store.oauthStates.take(oauthStateHash(s), 3_000));
    expect(taken).toEqual([undefined, undefined, undefined, "s3", "s4", "s5"]);
    expect(DEFAULT_MAX_LIVE_OAUTH_STATES).toBeGreaterThan(0);
  });

  it("refuses a raw state, an oversized payload, a state that expires before it is stored, a bad cap", async () => {
    const h = await be.harness();
    const hash = oauthStateHash(state());
    await expect(h.store.oauthStates.put(state(), "p", 10, 1)).rejects.toMatchObject({
      name: "StoreError",
      code: "invalid_record",
    });
    await expect(h.store.oauthStates.put(hash, "x".repeat(8 * 1024 + 1), 10, 1)).rejects.toMatchObject({
      code: "invalid_record",
    });
    await expect(h.store.oauthStates.put(hash, "p", 1, 1)).rejects.toMatchObject({ code: "invalid_record" });
    await expect(h.store.oauthStates.put(hash, "p", 10, 1, 0)).rejects.toMatchObject({ code: "invalid_record" });
    expect(await h.rows("SELECT state_hash FROM oauth_states")).toEqual([]);
  });

  it("of two stores racing to take the same states, each state is taken exactly once", async () => {
    const h = await be.harness();
    const other = await h.reopen();
    const hashes = Array.from({ length: 20 }, () => oauthStateHash(state()));
    for (const [k, s] of hashes.entries()) await h.store.oauthStates.put(s, `p${k}`, 100_000, 1_000);
    const results = await Promise.all(
      hashes.flatMap((s) => [h.store.oauthStates.take(s, 2_000), other.oauthStates.take(s, 2_000)]),
    );
    for (let k = 0; k < hashes.length; k++) {
      const pair = [results[2 * k], results[2 * k + 1]];
      expect(
        pair.filter((p) => p !== undefined),
        `state ${k}`,
      ).toEqual([`p${k}`]);
    }
  });

  it("two stores storing states at once still keep at most maxLive", async () => {
    const h = await be.harness();
    const other = await h.reopen();
    const puts = Array.from({ length: 16 }, (_, k) =>
      (k % 2 ? other : h.store).oauthStates.put(oauthStateHash(state()), `p${k}`, 100_000, 1_000 + k, 5),
    );
    const evicted = await Promise.all(puts);
    expect(evicted.reduce((a, b) => a + b, 0)).toBe(11);
    expect((await h.rows<{ n: number }>("SELECT count(*) AS n FROM oauth_states"))[0]!.n).toBe(5);
  });
});
