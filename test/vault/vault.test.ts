import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import type { Connection } from "../../src/store/records.js";
import { seal } from "../../src/vault/aead.js";
import { bindingOf } from "../../src/vault/binding.js";
import { VaultError } from "../../src/vault/errors.js";
import { KeyRing } from "../../src/vault/keyring.js";
import { Vault } from "../../src/vault/vault.js";
import { type Harness, harness, newKeyB64, TempDirs, threadInput } from "../support/foundation.js";

/**
 * Edits the database the way an attacker with the file would: from another connection (another
 * process), which the store notices (PRAGMA data_version) before it trusts any row it remembers.
 */
async function editWithSql(h: Harness, sql: string, params: unknown): Promise<number> {
  const other = new Database(h.store.db.name);
  try {
    return other.prepare(sql).run(params).changes;
  } finally {
    other.close();
    await new Promise((r) => setImmediate(r));
  }
}

const tmp = new TempDirs();
afterEach(() => tmp.cleanup());

async function openFromDb(h: Harness, id: string, vault: Vault = h.vault) {
  const c = await h.store.connections.get(id);
  if (!c) throw new Error(`no row ${id}`);
  return vault.openCredential(c.sealed, bindingOf(c));
}

async function refusal(p: Promise<unknown>): Promise<VaultError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(VaultError);
  return err as VaultError;
}

describe("Vault", () => {
  it("round-trips every credential kind", () => {
    const vault = new Vault(KeyRing.fromBase64(newKeyB64()));
    const b = {
      connectionId: "conn_x",
      teamId: "T1",
      ownerUserId: "U1",
      service: "svc",
      scope: "user" as const,
      channelId: null,
      threadTs: null,
    };
    const fields = { kind: "fields" as const, fields: { email: "a@example.com", token: "tok-123" } };
    expect(vault.openCredential(vault.sealCredential(fields, b), b)).toEqual(fields);
    const oauth = { kind: "oauth" as const, accessToken: "at", refreshToken: "rt", expiresAt: 1 };
    expect(vault.openCredential(vault.sealCredential(oauth, b), b)).toEqual({ ...oauth, tokenType: "Bearer" });
    const cookies = { kind: "cookies" as const, cookies: [{ name: "sid", value: "v", domain: "example.com" }] };
    expect(vault.openCredential(vault.sealCredential(cookies, b), b)).toEqual({
      kind: "cookies",
      cookies: [{ name: "sid", value: "v", domain: "example.com", path: "/" }],
    });
  });

  it("refuses a wiped row, a wrong key and a plaintext that is not a credential", () => {
    const ring = KeyRing.fromBase64(newKeyB64());
    const vault = new Vault(ring);
    const b = {
      connectionId: "conn_x",
      teamId: "T1",
      ownerUserId: null,
      service: "svc",
      scope: "shared" as const,
      channelId: null,
      threadTs: null,
    };
    expect(() => vault.openCredential(null, b)).toThrow(expect.objectContaining({ code: "wiped" }));

    const sealed = vault.sealCredential({ kind: "fields", fields: { token: "t" } }, b);
    const other = new Vault(KeyRing.fromBase64(newKeyB64()));
    expect(() => other.openCredential(sealed, b)).toThrow(
      expect.objectContaining({ name: "VaultError", code: "unknown_key" }),
    );
    // Same key id but different key material (a forged key_id): still refused.
    const forged = { ...sealed, keyId: other.primaryKeyId };
    expect(() => other.openCredential(forged, b)).toThrow(expect.objectContaining({ code: "undecryptable" }));

    const junk = seal(
      ring.subkey("credential-encryption"),
      ring.primaryId,
      Buffer.from(JSON.stringify({ kind: "fields", fields: {}, extra: 1 })),
      b,
    );
    expect(() => vault.openCredential(junk, b)).toThrow(expect.objectContaining({ code: "malformed_credential" }));
    const notJson = seal(ring.subkey("credential-encryption"), ring.primaryId, Buffer.from("{not json"), b);
    expect(() => vault.openCredential(notJson, b)).toThrow(expect.objectContaining({ code: "malformed_credential" }));
  });

  it("refuses to seal a credential of the wrong shape", () => {
    const vault = new Vault(KeyRing.fromBase64(newKeyB64()));
    const b = {
      connectionId: "conn_x",
      teamId: "T1",
      ownerUserId: null,
      service: "svc",
      scope: "shared" as const,
      channelId: null,
      threadTs: null,
    };
    expect(() => vault.sealCredential({ kind: "fields", fields: { token: "" } }, b)).toThrow();
  });

  it("ciphertext never contains the plaintext and uses the credential subkey, not the master", () => {
    const keyB64 = newKeyB64();
    const ring = KeyRing.fromBase64(keyB64);
    const vault = new Vault(ring);
    const b = {
      connectionId: "conn_x",
      teamId: "T1",
      ownerUserId: null,
      service: "svc",
      scope: "shared" as const,
      channelId: null,
      threadTs: null,
    };
    const sealed = vault.sealCredential({ kind: "fields", fields: { token: "PLAINTEXT-TOKEN" } }, b);
    expect(sealed.ciphertext.toString("latin1")).not.toContain("PLAINTEXT-TOKEN");
    expect(sealed.keyId).toBe(ring.primaryId);
  });
});

describe("Vault against rows in SQLite", () => {
  it("opens a stored row through the store", async () => {
    const h = harness(tmp);
    const c = await h.lifecycle.create(threadInput("U1", "token-a"));
    expect(await openFromDb(h, c.id)).toEqual({ kind: "fields", fields: { token: "token-a" } });
  });

  it("refuses a ciphertext moved to another row", async () => {
    const h = harness(tmp);
    const a = await h.lifecycle.create(threadInput("U1", "token-a"));
    const b = await h.lifecycle.create(threadInput("U2", "token-b"));
    // Copy A's secret columns (key id, nonce, ciphertext, tag) over B's.
    h.store.db
      .prepare(
        `UPDATE connections SET (key_id, secret_nonce, secret_ct, secret_tag) =
         (SELECT key_id, secret_nonce, secret_ct, secret_tag FROM connections WHERE id = @a) WHERE id = @b`,
      )
      .run({ a: a.id, b: b.id });
    const movedRow = (await h.store.connections.get(b.id))!;
    expect(movedRow.sealed!.ciphertext.equals((await h.store.connections.get(a.id))!.sealed!.ciphertext)).toBe(true);
    const err = await refusal(openFromDb(h, b.id));
    expect(err.code).toBe("undecryptable");
    expect(err.message).not.toContain("token-a");
    // A still opens: only the moved copy is refused.
    expect(await openFromDb(h, a.id)).toEqual({ kind: "fields", fields: { token: "token-a" } });
  });

  it("refuses an old ciphertext replayed into the row that replaced it (only the connection id differs)", async () => {
    const h = harness(tmp);
    const old = await h.lifecycle.create(threadInput("U1", "old-token"));
    const saved = h.store.db
      .prepare("SELECT key_id, secret_nonce, secret_ct, secret_tag FROM connections WHERE id = ?")
      .get(old.id) as Record<string, unknown>;
    const replacement = await h.lifecycle.create(threadInput("U1", "new-token"));
    expect((await h.store.connections.get(old.id))!.status).toBe("revoked");
    await editWithSql(
      h,
      "UPDATE connections SET key_id = @key_id, secret_nonce = @secret_nonce, secret_ct = @secret_ct, secret_tag = @secret_tag WHERE id = @id",
      { ...saved, id: replacement.id },
    );
    expect((await refusal(openFromDb(h, replacement.id))).code).toBe("undecryptable");
  });

  it("refuses a row whose owner, scope, team, service, channel or thread was edited with SQL", async () => {
    const edits: [string, string][] = [
      ["owner", "UPDATE connections SET owner_user_id = 'U_EVIL' WHERE id = ?"],
      ["scope thread→user", "UPDATE connections SET scope = 'user', channel_id = NULL, thread_ts = NULL WHERE id = ?"],
      ["team", "UPDATE connections SET team_id = 'T2' WHERE id = ?"],
      ["service", "UPDATE connections SET service = 'other' WHERE id = ?"],
      ["channel", "UPDATE connections SET channel_id = 'C2' WHERE id = ?"],
      ["thread", "UPDATE connections SET thread_ts = '1700000000.999999' WHERE id = ?"],
    ];
    const h = harness(tmp);
    for (const [i, [label, sql]] of edits.entries()) {
      // One thread per case, so the rows do not replace each other.
      const c = await h.lifecycle.create(threadInput("U1", `token-${label}`, `1700000001.00000${i}`));
      await expect(openFromDb(h, c.id)).resolves.toEqual({ kind: "fields", fields: { token: `token-${label}` } });
      expect(await editWithSql(h, sql, c.id)).toBe(1);
      const err = await refusal(openFromDb(h, c.id));
      expect(err.code, label).toBe("undecryptable");
    }
  });

  it("refuses a user-scope row turned into the shared identity", async () => {
    const h = harness(tmp);
    const c = await h.lifecycle.create({
      teamId: "T1",
      ownerUserId: "U1",
      service: "svc",
      scope: "user",
      credential: { kind: "fields", fields: { token: "user-token" } },
      createdBy: "U1",
    });
    await editWithSql(h, "UPDATE connections SET scope = 'shared', owner_user_id = NULL WHERE id = ?", c.id);
    expect((await refusal(openFromDb(h, c.id))).code).toBe("undecryptable");
  });

  it("refuses a row read with the wrong key", async () => {
    const h = harness(tmp);
    const c = await h.lifecycle.create(threadInput("U1", "token-a"));
    const wrong = new Vault(KeyRing.fromBase64(newKeyB64()));
    expect((await refusal(openFromDb(h, c.id, wrong))).code).toBe("unknown_key");
  });

  it("refuses a revoked (wiped) row", async () => {
    const h = harness(tmp);
    const c = await h.lifecycle.create(threadInput("U1", "token-a"));
    await h.lifecycle.revoke(c.id, "U1");
    const row = (await h.store.connections.get(c.id)) as Connection;
    expect(row.sealed).toBeNull();
    expect((await refusal(openFromDb(h, c.id))).code).toBe("wiped");
  });
});
