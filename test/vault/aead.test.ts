import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { associatedData, open, type SealedSecret, type SecretBinding, seal } from "../../src/vault/aead.js";
import { VaultError } from "../../src/vault/errors.js";

const binding: SecretBinding = {
  connectionId: "conn_a",
  teamId: "T1",
  ownerUserId: "U1",
  service: "svc",
  scope: "thread",
  channelId: "C1",
  threadTs: "1700000000.000100",
};

function flipBit(b: Buffer, index = 0): Buffer {
  const copy = Buffer.from(b);
  copy[index] = copy[index]! ^ 0x01;
  return copy;
}

function expectUndecryptable(fn: () => unknown): void {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  expect(caught).toBeInstanceOf(VaultError);
  expect((caught as VaultError).code).toBe("undecryptable");
}

describe("aead seal/open", () => {
  const key = randomBytes(32);
  const plaintext = Buffer.from("a secret token value");

  it("round-trips and produces a 96-bit nonce and 128-bit tag", () => {
    const sealed = seal(key, "k_1", plaintext, binding);
    expect(sealed.nonce).toHaveLength(12);
    expect(sealed.tag).toHaveLength(16);
    expect(sealed.keyId).toBe("k_1");
    expect(sealed.ciphertext.includes(plaintext)).toBe(false);
    expect(open(key, sealed, binding).equals(plaintext)).toBe(true);
  });

  it("refuses a tampered ciphertext, nonce or tag", () => {
    const sealed = seal(key, "k_1", plaintext, binding);
    expectUndecryptable(() => open(key, { ...sealed, ciphertext: flipBit(sealed.ciphertext, 3) }, binding));
    expectUndecryptable(() => open(key, { ...sealed, nonce: flipBit(sealed.nonce, 11) }, binding));
    expectUndecryptable(() => open(key, { ...sealed, tag: flipBit(sealed.tag, 15) }, binding));
    // Truncated tag or nonce: refused before GCM would accept a short tag.
    expectUndecryptable(() => open(key, { ...sealed, tag: sealed.tag.subarray(0, 4) }, binding));
    expectUndecryptable(() => open(key, { ...sealed, nonce: sealed.nonce.subarray(0, 8) }, binding));
    // The untouched one still opens: the refusals above are due to the tampering.
    expect(open(key, sealed, binding).equals(plaintext)).toBe(true);
  });

  it("refuses the wrong key and a different key id", () => {
    const sealed = seal(key, "k_1", plaintext, binding);
    expectUndecryptable(() => open(randomBytes(32), sealed, binding));
    expectUndecryptable(() => open(key, { ...sealed, keyId: "k_2" }, binding));
  });

  it("binds every field of the binding", () => {
    const sealed = seal(key, "k_1", plaintext, binding);
    const edits: Partial<SecretBinding>[] = [
      { connectionId: "conn_b" },
      { teamId: "T2" },
      { ownerUserId: "U2" },
      { ownerUserId: null },
      { service: "other" },
      { scope: "user" },
      { channelId: "C2" },
      { threadTs: "1700000000.000200" },
    ];
    for (const edit of edits) expectUndecryptable(() => open(key, sealed, { ...binding, ...edit }));
  });

  it("encodes the AAD unambiguously (no field-boundary collisions)", () => {
    const a = associatedData({ ...binding, teamId: "T1", service: "x,svc" }, "k");
    const b = associatedData({ ...binding, teamId: "T1,x", service: "svc" }, "k");
    expect(a.equals(b)).toBe(false);
    expect(
      associatedData({ ...binding, ownerUserId: null }, "k").equals(
        associatedData({ ...binding, ownerUserId: "null" }, "k"),
      ),
    ).toBe(false);
  });

  it("never repeats a nonce in 100k encryptions", () => {
    const tiny = Buffer.from("x");
    const nonces = new Set<string>();
    let last: SealedSecret | undefined;
    for (let i = 0; i < 100_000; i++) {
      last = seal(key, "k_1", tiny, binding);
      nonces.add(last.nonce.toString("hex"));
    }
    expect(nonces.size).toBe(100_000);
    expect(open(key, last!, binding).toString()).toBe("x");
  });
});
