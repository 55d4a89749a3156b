// Sealing an installation's Slack tokens: AES-256-GCM under a subkey of its own, bound to the
// installation's id, enterprise, team, org-wide flag, app and key id; every doubt fails closed.
import { describe, expect, it } from "vitest";
import type { InstallationBinding } from "../../src/store/installation-records.js";
import { sealWithAad } from "../../src/vault/aead.js";
import { VaultError } from "../../src/vault/errors.js";
import { installationAssociatedData } from "../../src/vault/installation-binding.js";
import { KeyRing } from "../../src/vault/keyring.js";
import { Vault } from "../../src/vault/vault.js";
import { newKeyB64 } from "../support/foundation.js";

const binding: InstallationBinding = {
  id: "inst_1",
  enterpriseId: "E1",
  teamId: "T1",
  isEnterpriseInstall: false,
  appId: "A1",
};
const tokens = { botToken: "xoxe.xoxb-1-bot", refreshToken: "xoxe-1-refresh" };

function refusal(fn: () => unknown): VaultError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(VaultError);
    return e as VaultError;
  }
  throw new Error("expected a VaultError");
}

describe("Vault installation sealing", () => {
  it("round-trips the bot token with and without a refresh token", () => {
    const vault = new Vault(KeyRing.fromBase64(newKeyB64()));
    expect(vault.openInstallation(vault.sealInstallation(tokens, binding), binding)).toEqual(tokens);
    const single = vault.openInstallation(vault.sealInstallation({ botToken: "xoxb-plain" }, binding), binding);
    expect(single).toEqual({ botToken: "xoxb-plain" });
    expect(Object.keys(single)).toEqual(["botToken"]);
    // Fresh nonce every time; the plaintext is nowhere in the sealed bytes.
    const a = vault.sealInstallation(tokens, binding);
    const b = vault.sealInstallation(tokens, binding);
    expect(a.nonce.equals(b.nonce)).toBe(false);
    expect(a.ciphertext.includes(Buffer.from("xoxb"))).toBe(false);
    expect(a.keyId).toBe(vault.primaryKeyId);
  });

  it("any change of a bound field, or of the key id, makes the tokens undecryptable", () => {
    const vault = new Vault(KeyRing.fromBase64(newKeyB64()));
    const sealed = vault.sealInstallation(tokens, binding);
    const changed: InstallationBinding[] = [
      { ...binding, id: "inst_2" },
      { ...binding, enterpriseId: null },
      { ...binding, enterpriseId: "E2" },
      { ...binding, teamId: "T2" },
      { ...binding, teamId: null },
      { ...binding, isEnterpriseInstall: true },
      { ...binding, appId: "A2" },
    ];
    for (const b of changed)
      expect(refusal(() => vault.openInstallation(sealed, b)).code, JSON.stringify(b)).toBe("undecryptable");
    // The key id is in the AAD: relabelling a ciphertext with another known key id fails too.
    const keyA = newKeyB64();
    const keyB = newKeyB64();
    const both = new Vault(KeyRing.fromBase64(keyA, [keyB]));
    const underA = both.sealInstallation(tokens, binding);
    expect(
      refusal(() => both.openInstallation({ ...underA, keyId: KeyRing.fromBase64(keyB).primaryId }, binding)).code,
    ).toBe("undecryptable");
    const flipped = Buffer.from(underA.ciphertext);
    flipped[0]! ^= 1;
    expect(refusal(() => both.openInstallation({ ...underA, ciphertext: flipped }, binding)).code).toBe(
      "undecryptable",
    );
  });

  it("refuses a wiped row, an unknown key, another purpose's ciphertext and a document that is not installation tokens", () => {
    const ring = KeyRing.fromBase64(newKeyB64());
    const vault = new Vault(ring);
    expect(refusal(() => vault.openInstallation(null, binding)).code).toBe("wiped");
    const stranger = new Vault(KeyRing.fromBase64(newKeyB64()));
    expect(refusal(() => stranger.openInstallation(vault.sealInstallation(tokens, binding), binding)).code).toBe(
      "unknown_key",
    );
    // The same AAD under the credential subkey: a subkey for one purpose is useless for another.
    const keyId = ring.primaryId;
    const aad = installationAssociatedData(binding, keyId);
    const otherPurpose = sealWithAad(
      ring.subkey("credential-encryption", keyId),
      keyId,
      Buffer.from(JSON.stringify(tokens)),
      aad,
    );
    expect(refusal(() => vault.openInstallation(otherPurpose, binding)).code).toBe("undecryptable");
    const sub = ring.subkey("installation-encryption", keyId);
    for (const doc of [
      "not json",
      "{}",
      '{"botToken":""}',
      '{"botToken":"xoxb-1","extra":1}',
      '{"botToken":"xoxb 1"}',
      '["xoxb-1"]',
    ]) {
      const bad = sealWithAad(sub, keyId, Buffer.from(doc), aad);
      expect(refusal(() => vault.openInstallation(bad, binding)).code, doc).toBe("malformed_credential");
    }
  });

  it("refuses to seal anything but a bot token (and optional refresh token), without quoting it", () => {
    const vault = new Vault(KeyRing.fromBase64(newKeyB64()));
    for (const bad of [
      { botToken: "" },
      { botToken: "xoxb-1 with space" },
      { botToken: "xoxb-1", refreshToken: "" },
      { botToken: "xoxb-1", other: "x" },
    ]) {
      const e = refusal(() => vault.sealInstallation(bad as never, binding));
      expect(e.code).toBe("malformed_credential");
      expect(e.message).not.toContain("xoxb-1");
    }
  });

  it("reseals under the primary key of a rotated ring; the old key alone then no longer opens it", () => {
    const keyA = newKeyB64();
    const keyB = newKeyB64();
    const sealed = new Vault(KeyRing.fromBase64(keyA)).sealInstallation(tokens, binding);
    const rotating = new Vault(KeyRing.fromBase64(keyB, [keyA]));
    const resealed = rotating.resealInstallation(sealed, binding);
    expect(resealed.keyId).toBe(KeyRing.fromBase64(keyB).primaryId);
    expect(new Vault(KeyRing.fromBase64(keyB)).openInstallation(resealed, binding)).toEqual(tokens);
    expect(refusal(() => new Vault(KeyRing.fromBase64(keyA)).openInstallation(resealed, binding)).code).toBe(
      "unknown_key",
    );
    expect(refusal(() => rotating.resealInstallation(sealed, { ...binding, teamId: "T9" })).code).toBe("undecryptable");
  });
});
