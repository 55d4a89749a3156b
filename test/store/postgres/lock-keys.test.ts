// Advisory lock keys from the key ring (src/store/postgres/lock-keys.ts): stable for one ring, unknown
// without it, and shared by the rings a rolling key rotation puts side by side.
import { describe, expect, it } from "vitest";
import { LockKeys } from "../../../src/store/postgres/lock-keys.js";
import { KeyRing } from "../../../src/vault/keyring.js";
import { newKeyB64 } from "../../support/foundation.js";

const NAME = "slaude-connect:public:job:ttl reaper";

describe("LockKeys", () => {
  it("gives one ring the same keys every time (every replica agrees), and another ring other keys", () => {
    const k = newKeyB64();
    const a = LockKeys.fromRing(KeyRing.fromBase64(k)).keys(NAME);
    expect(a).toHaveLength(1);
    expect(LockKeys.fromRing(KeyRing.fromBase64(k)).keys(NAME)).toEqual(a);
    expect(LockKeys.fromRing(KeyRing.fromBase64(newKeyB64())).keys(NAME)).not.toEqual(a);
    expect(LockKeys.fromRing(KeyRing.fromBase64(k)).keys(`${NAME}x`)).not.toEqual(a);
    expect(LockKeys.unkeyed().keys(NAME)).not.toEqual(a);
    expect(LockKeys.unkeyed().keyed).toBe(false);
    for (const key of a) expect(BigInt(key) >= -(2n ** 63n) && BigInt(key) < 2n ** 63n).toBe(true);
  });

  it("a ring with a previous key takes the keys of both rings it sits beside during a rotation, ascending", () => {
    const k1 = newKeyB64();
    const k2 = newKeyB64();
    const old = LockKeys.fromRing(KeyRing.fromBase64(k1)).keys(NAME);
    const both = LockKeys.fromRing(KeyRing.fromBase64(k2, [k1])).keys(NAME);
    const next = LockKeys.fromRing(KeyRing.fromBase64(k2)).keys(NAME);
    expect(both).toHaveLength(2);
    expect(both).toEqual(expect.arrayContaining([...old, ...next]));
    expect([...both].sort((x, y) => (BigInt(x) < BigInt(y) ? -1 : 1))).toEqual(both);
  });
});
