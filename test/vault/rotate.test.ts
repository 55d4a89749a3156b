import { afterEach, describe, expect, it } from "vitest";
import type { InstallationTokens } from "../../src/store/installation-records.js";
import { bindingOf } from "../../src/vault/binding.js";
import { VaultError } from "../../src/vault/errors.js";
import { KeyRing } from "../../src/vault/keyring.js";
import { rotateKeys } from "../../src/vault/rotate.js";
import { Vault } from "../../src/vault/vault.js";
import { canaryTokens, installation, orgInstallation } from "../store/contract/installation-fixtures.js";
import { type Harness, harness, newKeyB64, rows, TempDirs, threadInput } from "../support/foundation.js";

const tmp = new TempDirs();
afterEach(() => tmp.cleanup());

interface SecretCols {
  id: string;
  status: string;
  key_id: string | null;
  secret_nonce: Buffer | null;
  secret_ct: Buffer | null;
  secret_tag: Buffer | null;
}

function secretCols(h: Harness): SecretCols[] {
  return rows<SecretCols>(
    h.store,
    "SELECT id, status, key_id, secret_nonce, secret_ct, secret_tag FROM connections ORDER BY id",
  );
}

/** Creates thread, user and shared connections (plus a revoked one) under the harness key. */
async function seed(h: Harness): Promise<Map<string, string>> {
  const tokens = new Map<string, string>();
  const a = await h.lifecycle.create(threadInput("U1", "tok-thread-1"));
  tokens.set(a.id, "tok-thread-1");
  const b = await h.lifecycle.create(threadInput("U2", "tok-thread-2"));
  tokens.set(b.id, "tok-thread-2");
  const u = await h.lifecycle.create({
    teamId: "T1",
    ownerUserId: "U3",
    service: "svc",
    scope: "user",
    credential: { kind: "fields", fields: { token: "tok-user" } },
    createdBy: "U3",
  });
  tokens.set(u.id, "tok-user");
  const s = await h.lifecycle.create({
    teamId: "T1",
    ownerUserId: null,
    service: "svc",
    scope: "shared",
    credential: { kind: "oauth", accessToken: "tok-shared" },
    createdBy: "cli:ops",
  });
  tokens.set(s.id, "tok-shared");
  const gone = await h.lifecycle.create(threadInput("U4", "tok-revoked"));
  await h.lifecycle.revoke(gone.id, "U4");
  return tokens;
}

describe("rotateKeys", () => {
  it("re-encrypts every live row under the new key so that key B alone opens them", async () => {
    const keyA = newKeyB64();
    const keyB = newKeyB64();
    const h = harness(tmp, keyA);
    const tokens = await seed(h);
    const idA = KeyRing.fromBase64(keyA).primaryId;
    const idB = KeyRing.fromBase64(keyB).primaryId;
    expect(
      secretCols(h)
        .filter((r) => r.secret_ct)
        .every((r) => r.key_id === idA),
    ).toBe(true);

    const rotating = new Vault(KeyRing.fromBase64(keyB, [keyA]));
    h.clock.advance(1000);
    const n = await rotateKeys({ rows: h.store, vault: rotating, clock: h.clock }, "cli:test");
    expect(n).toEqual({ connections: tokens.size, installations: 0 });

    const onlyB = new Vault(KeyRing.fromBase64(keyB));
    const onlyA = new Vault(KeyRing.fromBase64(keyA));
    for (const [id, token] of tokens) {
      const c = (await h.store.connections.get(id))!;
      expect(c.sealed!.keyId).toBe(idB);
      const cred = onlyB.openCredential(c.sealed, bindingOf(c));
      expect(cred.kind === "fields" ? cred.fields.token : cred.kind === "oauth" ? cred.accessToken : undefined).toBe(
        token,
      );
      expect(() => onlyA.openCredential(c.sealed, bindingOf(c))).toThrow(VaultError);
    }
    // The wiped row stays wiped; every row holding a secret is under B.
    const cols = secretCols(h);
    expect(cols.filter((r) => r.status === "revoked").every((r) => r.secret_ct === null && r.key_id === null)).toBe(
      true,
    );
    expect(cols.filter((r) => r.secret_ct !== null).map((r) => r.key_id)).toEqual(Array(tokens.size).fill(idB));

    const audit = await h.store.audit.query({ event: "keys_rotated" });
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ decision: idB, actor: "cli:test", at: h.clock.now() });
  });

  it("aborts the whole rotation, changing nothing, when one row cannot be opened", async () => {
    const keyA = newKeyB64();
    const keyB = newKeyB64();
    const h = harness(tmp, keyA);
    const tokens = await seed(h);
    const victim = [...tokens.keys()][2]!;
    // Tamper one row: its owner is edited, so its AAD no longer matches.
    h.store.db.prepare("UPDATE connections SET owner_user_id = 'U_EVIL' WHERE id = ?").run(victim);
    const before = secretCols(h);
    const auditBefore = await h.store.audit.count();

    const rotating = new Vault(KeyRing.fromBase64(keyB, [keyA]));
    await expect(rotateKeys({ rows: h.store, vault: rotating, clock: h.clock }, "cli:test")).rejects.toMatchObject({
      name: "VaultError",
      code: "undecryptable",
    });

    expect(secretCols(h)).toEqual(before);
    expect(await h.store.audit.count()).toBe(auditBefore);
    expect(await h.store.audit.count({ event: "keys_rotated" })).toBe(0);
    // Every untampered row still opens with key A alone.
    for (const [id] of tokens) {
      if (id === victim) continue;
      const c = (await h.store.connections.get(id))!;
      expect(() => h.vault.openCredential(c.sealed, bindingOf(c))).not.toThrow();
    }
  });

  it("aborts when a row is under a key the ring does not know", async () => {
    const keyA = newKeyB64();
    const h = harness(tmp, keyA);
    await seed(h);
    const before = secretCols(h);
    // The operator forgot SLAUDE_ENCRYPTION_KEY_PREVIOUS: only B is known.
    const onlyB = new Vault(KeyRing.fromBase64(newKeyB64()));
    await expect(rotateKeys({ rows: h.store, vault: onlyB, clock: h.clock }, "cli:test")).rejects.toMatchObject({
      code: "unknown_key",
    });
    expect(secretCols(h)).toEqual(before);
  });

  it("re-encrypts the installations' Slack tokens in the same run and transaction; a tombstone stays wiped", async () => {
    const keyA = newKeyB64();
    const keyB = newKeyB64();
    const h = harness(tmp, keyA);
    const tokens = await seed(h);
    const sealedTokens = new Map<string, InstallationTokens>();
    for (const i of [
      installation(h.vault, { teamId: "T1" }),
      installation(h.vault, { teamId: "T2", enterpriseId: "E1" }),
      orgInstallation(h.vault, "E1"),
    ]) {
      const t = h.vault.openInstallation(i.sealed, i);
      sealedTokens.set(i.id, t);
      await h.store.installations.upsert(i, []);
    }
    const gone = installation(h.vault, { teamId: "T3" });
    await h.store.installations.upsert(gone, []);
    await h.store.installations.uninstall(gone.id, 5, []);

    const rotating = new Vault(KeyRing.fromBase64(keyB, [keyA]));
    expect(await rotateKeys({ rows: h.store, vault: rotating, clock: h.clock }, "cli:test")).toEqual({
      connections: tokens.size,
      installations: 3,
    });
    const onlyB = new Vault(KeyRing.fromBase64(keyB));
    const onlyA = new Vault(KeyRing.fromBase64(keyA));
    for (const [id, t] of sealedTokens) {
      const i = (await h.store.installations.get(id))!;
      expect(i.sealed!.keyId).toBe(onlyB.primaryKeyId);
      expect(onlyB.openInstallation(i.sealed, i)).toEqual(t);
      expect(() => onlyA.openInstallation(i.sealed, i)).toThrow(VaultError);
    }
    expect((await h.store.installations.get(gone.id))!.sealed).toBeNull();
    expect(await h.store.audit.count({ event: "keys_rotated" })).toBe(1);
  });

  it("one installation that cannot be opened aborts the whole rotation: connections keep their old ciphertexts too", async () => {
    const keyA = newKeyB64();
    const h = harness(tmp, keyA);
    await seed(h);
    const ok = installation(h.vault, { teamId: "T1", tokens: canaryTokens() });
    const victim = installation(h.vault, { teamId: "T2" });
    await h.store.installations.upsert(ok, []);
    await h.store.installations.upsert(victim, []);
    // Someone with the file points the installation at another team: its AAD no longer matches.
    h.store.db.prepare("UPDATE installations SET team_id = 'T9' WHERE id = ?").run(victim.id);
    const connectionsBefore = secretCols(h);
    const installationsBefore = rows(
      h.store,
      "SELECT id, key_id, token_nonce, token_ct, token_tag FROM installations ORDER BY id",
    );
    const rotating = new Vault(KeyRing.fromBase64(newKeyB64(), [keyA]));
    await expect(rotateKeys({ rows: h.store, vault: rotating, clock: h.clock }, "cli:test")).rejects.toMatchObject({
      name: "VaultError",
      code: "undecryptable",
    });
    expect(secretCols(h)).toEqual(connectionsBefore);
    expect(rows(h.store, "SELECT id, key_id, token_nonce, token_ct, token_tag FROM installations ORDER BY id")).toEqual(
      installationsBefore,
    );
    expect(await h.store.audit.count({ event: "keys_rotated" })).toBe(0);
  });
});
