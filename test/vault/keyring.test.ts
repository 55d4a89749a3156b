import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { VaultError } from "../../src/vault/errors.js";
import { decodeMasterKey, type KeyPurpose, KeyRing, keyIdOf } from "../../src/vault/keyring.js";

function vaultErrorOf(fn: () => unknown): VaultError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(VaultError);
    return e as VaultError;
  }
  throw new Error("expected a VaultError, nothing was thrown");
}

describe("decodeMasterKey / KeyRing.fromBase64", () => {
  it("accepts 32 bytes of base64", () => {
    const raw = randomBytes(32);
    expect(decodeMasterKey(raw.toString("base64")).equals(raw)).toBe(true);
    expect(KeyRing.fromBase64(raw.toString("base64")).primaryId).toBe(keyIdOf(raw));
  });

  it("rejects a wrong-length key, naming SLAUDE_ENCRYPTION_KEY", () => {
    for (const len of [16, 31, 33, 64]) {
      const err = vaultErrorOf(() => KeyRing.fromBase64(randomBytes(len).toString("base64")));
      expect(err.code).toBe("invalid_key");
      expect(err.message).toContain("SLAUDE_ENCRYPTION_KEY");
      expect(err.message).toContain(String(len));
    }
  });

  it("rejects non-base64 keys without echoing them", () => {
    const bad = [
      "not base64 at all!!",
      "abc$def",
      randomBytes(32).toString("base64url").replace(/^./, "-"),
      randomBytes(32).toString("hex"),
      "",
    ];
    for (const value of bad) {
      const err = vaultErrorOf(() => KeyRing.fromBase64(value));
      expect(err.code).toBe("invalid_key");
      expect(err.message).toContain("SLAUDE_ENCRYPTION_KEY");
      if (value) expect(err.message).not.toContain(value);
    }
  });

  it("names the previous key that is bad", () => {
    const err = vaultErrorOf(() =>
      KeyRing.fromBase64(randomBytes(32).toString("base64"), [randomBytes(32).toString("base64"), "short"]),
    );
    expect(err.message).toContain("SLAUDE_ENCRYPTION_KEY_PREVIOUS[1]");
  });
});

describe("KeyRing subkeys", () => {
  const purposes: KeyPurpose[] = ["credential-encryption", "login-link", "approval-nonce"];

  it("derives a distinct 32-byte subkey per purpose, none equal to the master", () => {
    const master = randomBytes(32);
    const ring = new KeyRing(master);
    const subs = purposes.map((p) => ring.subkey(p));
    for (const s of subs) {
      expect(s).toHaveLength(32);
      expect(s.equals(master)).toBe(false);
    }
    expect(new Set(subs.map((s) => s.toString("hex"))).size).toBe(purposes.length);
  });

  it("is deterministic per master and differs between masters", () => {
    const master = randomBytes(32);
    const a = new KeyRing(master).subkey("credential-encryption");
    const b = new KeyRing(Buffer.from(master)).subkey("credential-encryption");
    const c = new KeyRing(randomBytes(32)).subkey("credential-encryption");
    expect(a.equals(b)).toBe(true);
    expect(a.equals(c)).toBe(false);
  });

  it("keeps previous keys for decryption and fails closed on unknown ids", () => {
    const primary = randomBytes(32);
    const previous = randomBytes(32);
    const ring = new KeyRing(primary, [previous]);
    expect(ring.primaryId).toBe(keyIdOf(primary));
    expect(ring.ids()).toEqual([keyIdOf(primary), keyIdOf(previous)]);
    expect(ring.has(keyIdOf(previous))).toBe(true);
    expect(
      ring
        .subkey("credential-encryption", keyIdOf(previous))
        .equals(new KeyRing(previous).subkey("credential-encryption")),
    ).toBe(true);
    const err = vaultErrorOf(() => ring.subkey("credential-encryption", keyIdOf(randomBytes(32))));
    expect(err.code).toBe("unknown_key");
  });

  it("key ids are stable, distinct and do not reveal the key", () => {
    const master = randomBytes(32);
    const id = keyIdOf(master);
    expect(id).toMatch(/^k_[0-9a-f]{16}$/);
    expect(keyIdOf(Buffer.from(master))).toBe(id);
    expect(keyIdOf(randomBytes(32))).not.toBe(id);
    expect(id).not.toContain(master.toString("hex").slice(0, 8));
  });
});
