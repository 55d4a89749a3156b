import { describe, expect, it } from "vitest";
import type { AuditEvent } from "../../../src/audit/event.js";
import { StoreError } from "../../../src/store/errors.js";
import type { InstallationMeta } from "../../../src/store/installation-records.js";
import { bindingOf } from "../../../src/vault/binding.js";
import { VaultError } from "../../../src/vault/errors.js";
import type { Resealers } from "../../../src/vault/rotate.js";
import { threadInput } from "../../support/foundation.js";
import { backends, type StoreHarness } from "./backends.js";
import { canaryTokens, installation, orgInstallation } from "./installation-fixtures.js";

// The installations repository on both adapters: one live row per team install and per org-wide
// install, reinstall replacing tokens and scopes, enterprise-first lookup, status changes with their
// audit rows, uninstall wiping the ciphertext, and sealed tokens that do not survive being moved.

const BACKENDS = backends();

/** An audit event the table refuses (event is NOT NULL): it makes the audit write fail mid-transaction. */
const BROKEN_AUDIT = { at: 1, event: null } as unknown as AuditEvent;

type TokenCols = {
  id: string;
  status: string;
  key_id: string | null;
  token_nonce: Buffer | null;
  token_ct: Buffer | null;
  token_tag: Buffer | null;
  token_expires_at: number | null;
};
const tokenCols = (h: StoreHarness, id: string) =>
  h.rows<TokenCols>(
    "SELECT id, status, key_id, token_nonce, token_ct, token_tag, token_expires_at FROM installations WHERE id = ?",
    id,
  );

describe.each(BACKENDS)("installations repository on $name", (be) => {
  it("a reinstall of the same team replaces the row: new tokens and scopes, the old row and its ciphertext gone, install and reinstall told apart", async () => {
    const h = await be.harness();
    const seen: (InstallationMeta | undefined)[] = [];
    const auditOf =
      (kind: "installation_installed" | "installation_updated") => (prev: InstallationMeta | undefined) => {
        seen.push(prev);
        return [
          {
            at: 1,
            event: prev ? ("installation_updated" as const) : kind,
            teamId: "T1",
            decision: prev ? "scopes_changed" : null,
          },
        ];
      };
    const first = installation(h.vault, { scopes: ["chat:write"] });
    expect(await h.store.installations.upsert(first, auditOf("installation_installed"))).toEqual(first);
    const tokens = canaryTokens();
    const second = installation(h.vault, {
      scopes: ["chat:write", "im:write"],
      tokens,
      installedAt: 2_000,
      updatedAt: 2_000,
    });
    const stored = await h.store.installations.upsert(second, auditOf("installation_installed"));
    expect(stored).toEqual(second);

    expect(seen[0]).toBeUndefined();
    expect(seen[1]).toMatchObject({ id: first.id, scopes: ["chat:write"] });
    expect(seen[1]).not.toHaveProperty("sealed");
    expect(await h.store.installations.get(first.id)).toBeUndefined();
    expect(await h.rows("SELECT id FROM installations")).toEqual([{ id: second.id }]);
    const found = (await h.store.installations.find({ enterpriseId: null, teamId: "T1" }))!;
    expect(found.scopes).toEqual(["chat:write", "im:write"]);
    expect(h.vault.openInstallation(found.sealed, found)).toEqual(tokens);
    expect(await h.store.installations.countLive()).toBe(1);
    expect((await h.store.audit.query({})).map((a) => [a.event, a.decision])).toEqual([
      ["installation_installed", null],
      ["installation_updated", "scopes_changed"],
    ]);
  });

  it("find takes the org-wide install of the enterprise first, then the team's own, and never a tombstone", async () => {
    const h = await be.harness();
    const team = installation(h.vault, { teamId: "T1", enterpriseId: "E1" });
    const other = installation(h.vault, { teamId: "T2" });
    const org = orgInstallation(h.vault, "E1");
    for (const i of [team, other, org]) await h.store.installations.upsert(i, []);
    const find = (enterpriseId: string | null, teamId: string | null) =>
      h.store.installations.find({ enterpriseId, teamId }).then((i) => i?.id);
    expect(await find("E1", "T1")).toBe(org.id);
    expect(await find("E1", "T9")).toBe(org.id);
    expect(await find("E1", null)).toBe(org.id);
    expect(await find(null, "T1")).toBe(team.id);
    expect(await find("E2", "T1")).toBe(team.id);
    expect(await find("E2", "T2")).toBe(other.id);
    expect(await find(null, "T3")).toBeUndefined();
    expect(await find(null, null)).toBeUndefined();
    // A team id never finds an org-wide install, nor an enterprise id a team install.
    expect(await find("T1", null)).toBeUndefined();
    // A disabled org-wide install still wins (the caller refuses it): no silent fallback to another token.
    expect(await h.store.installations.setStatus(org.id, "disabled", "tokens_revoked", 5, [])).toBe(true);
    expect(await h.store.installations.find({ enterpriseId: "E1", teamId: "T1" })).toMatchObject({
      id: org.id,
      status: "disabled",
      statusReason: "tokens_revoked",
    });
    expect(await h.store.installations.uninstall(org.id, 6, [])).toBe(true);
    expect(await find("E1", "T1")).toBe(team.id);
    expect(await find("E1", "T9")).toBeUndefined();
  });

  it("the live keys are unique in the tables themselves, although enterprise or team is NULL; tombstones never block", async () => {
    const h = await be.harness();
    const hex = (n: number) => "ab".repeat(n);
    const insert = (id: string, enterprise: string | null, team: string | null, org: 0 | 1, status: string) => {
      const live = status !== "uninstalled";
      return h.exec(
        `INSERT INTO installations (id, enterprise_id, team_id, is_enterprise_install, app_id, bot_id, bot_user_id, scopes, status, status_reason,
         key_id, token_nonce, token_ct, token_tag, installed_at, updated_at) VALUES (?, ?, ?, ?, 'A1', 'B1', 'U1', '', ?, ?, ?, ${live ? be.blob(hex(12)) : "NULL"}, ${live ? be.blob(hex(8)) : "NULL"}, ${live ? be.blob(hex(16)) : "NULL"}, 1, 1)`,
        id,
        enterprise,
        team,
        org,
        status,
        status === "disabled" ? "operator" : null,
        live ? "k_test" : null,
      );
    };
    await insert("a", null, "T1", 0, "active");
    await expect(insert("b", null, "T1", 0, "active")).rejects.toThrow(be.errors.unique);
    await expect(insert("b", "E1", "T1", 0, "disabled")).rejects.toThrow(be.errors.unique);
    await insert("c", null, "T1", 0, "uninstalled");
    await insert("d", null, "T1", 0, "uninstalled");
    await insert("e", "E1", null, 1, "active");
    await expect(insert("f", "E1", null, 1, "disabled")).rejects.toThrow(be.errors.unique);
    // An org-wide install and a team install of one of its workspaces are different keys.
    await insert("g", "E1", "T2", 0, "active");
    await insert("h", "E1", "T3", 1, "uninstalled");
    // A team install without a team, an org-wide one without an enterprise, a live row without tokens: refused.
    await expect(insert("i", "E1", null, 0, "active")).rejects.toThrow(be.errors.check);
    await expect(insert("j", null, "T5", 1, "active")).rejects.toThrow(be.errors.check);
    await expect(
      h.exec(
        "INSERT INTO installations (id, team_id, is_enterprise_install, app_id, bot_id, bot_user_id, scopes, status, installed_at, updated_at) VALUES ('k', 'T6', 0, 'A1', 'B1', 'U1', '', 'active', 1, 1)",
      ),
    ).rejects.toThrow(be.errors.check);
  });

  it("status changes apply once with their audit rows; tokens are refreshed only on an active row", async () => {
    const h = await be.harness();
    const i = installation(h.vault);
    await h.store.installations.upsert(i, []);
    const ev = (event: AuditEvent["event"], at: number): AuditEvent[] => [{ at, event, teamId: "T1" }];
    expect(
      await h.store.installations.setStatus(i.id, "disabled", "tokens_revoked", 10, ev("installation_disabled", 10)),
    ).toBe(true);
    // Two replicas handling the same tokens_revoked: the second changes nothing and audits nothing.
    expect(
      await h.store.installations.setStatus(i.id, "disabled", "tokens_revoked", 11, ev("installation_disabled", 11)),
    ).toBe(false);
    expect(
      await h.store.installations.setStatus(i.id, "disabled", "operator", 12, ev("installation_disabled", 12)),
    ).toBe(true);
    const refreshed = h.vault.sealInstallation(canaryTokens(), i);
    expect(
      await h.store.installations.updateTokens(i.id, refreshed, 99_000, 13, ev("installation_token_refreshed", 13)),
    ).toBe(false);
    expect(await h.store.installations.setStatus(i.id, "active", null, 14, ev("installation_enabled", 14))).toBe(true);
    expect(await h.store.installations.setStatus(i.id, "active", null, 15, ev("installation_enabled", 15))).toBe(false);
    expect(
      await h.store.installations.updateTokens(i.id, refreshed, 99_000, 16, ev("installation_token_refreshed", 16)),
    ).toBe(true);
    const after = (await h.store.installations.get(i.id))!;
    expect(after).toMatchObject({ status: "active", statusReason: null, tokenExpiresAt: 99_000, updatedAt: 16 });
    expect(h.vault.openInstallation(after.sealed, after)).toEqual(h.vault.openInstallation(refreshed, i));
    expect((await h.store.audit.query({})).map((a) => [a.event, a.at])).toEqual([
      ["installation_disabled", 10],
      ["installation_disabled", 12],
      ["installation_enabled", 14],
      ["installation_token_refreshed", 16],
    ]);
    expect(await h.store.installations.setStatus("inst_missing", "disabled", "operator", 17, [])).toBe(false);
    await expect(h.store.installations.setStatus(i.id, "active", "operator", 18, [])).rejects.toMatchObject({
      name: "StoreError",
      code: "invalid_record",
    });
    await expect(h.store.installations.setStatus(i.id, "disabled", null, 18, [])).rejects.toMatchObject({
      code: "invalid_record",
    });
    await expect(
      h.store.installations.setStatus(i.id, "disabled", "free text with the token xoxb-1", 18, []),
    ).rejects.toMatchObject({ code: "invalid_record" });
  });

  it("uninstall wipes the ciphertext, keeps a tombstone out of every listing, and applies once", async () => {
    const h = await be.harness();
    const i = installation(h.vault, { tokenExpiresAt: 50_000 });
    const keep = installation(h.vault, { teamId: "T2" });
    await h.store.installations.upsert(i, []);
    await h.store.installations.upsert(keep, []);
    expect(
      await h.store.installations.uninstall(i.id, 20, [{ at: 20, event: "installation_uninstalled", teamId: "T1" }]),
    ).toBe(true);
    expect(
      await h.store.installations.uninstall(i.id, 21, [{ at: 21, event: "installation_uninstalled", teamId: "T1" }]),
    ).toBe(false);
    expect(await tokenCols(h, i.id)).toEqual([
      {
        id: i.id,
        status: "uninstalled",
        key_id: null,
        token_nonce: null,
        token_ct: null,
        token_tag: null,
        token_expires_at: null,
      },
    ]);
    const tomb = (await h.store.installations.get(i.id))!;
    expect(tomb).toMatchObject({ status: "uninstalled", sealed: null, updatedAt: 20 });
    expect(() => h.vault.openInstallation(tomb.sealed, tomb)).toThrow(
      expect.objectContaining({ name: "VaultError", code: "wiped" }),
    );
    expect(await h.store.installations.find({ enterpriseId: null, teamId: "T1" })).toBeUndefined();
    expect((await h.store.installations.list(10)).map((m) => m.id)).toEqual([keep.id]);
    expect(await h.store.installations.countLive()).toBe(1);
    expect(await h.store.installations.setStatus(i.id, "disabled", "operator", 22, [])).toBe(false);
    expect(
      await h.store.installations.updateTokens(i.id, h.vault.sealInstallation(canaryTokens(), i), null, 22, []),
    ).toBe(false);
    expect(await h.store.audit.count({ event: "installation_uninstalled" })).toBe(1);
    // Installing again drops the tombstone with it.
    const again = installation(h.vault);
    await h.store.installations.upsert(again, []);
    expect((await h.rows<{ id: string }>("SELECT id FROM installations ORDER BY id")).map((r) => r.id).sort()).toEqual(
      [again.id, keep.id].sort(),
    );
  });

  it("list shows live installations newest first, at most `limit`, without their sealed tokens", async () => {
    const h = await be.harness();
    const ids: string[] = [];
    for (let k = 0; k < 5; k++) {
      const i = installation(h.vault, { teamId: `T${k}`, installedAt: 100 + k });
      ids.push(i.id);
      await h.store.installations.upsert(i, []);
    }
    await h.store.installations.setStatus(ids[4]!, "disabled", "operator", 200, []);
    const listed = await h.store.installations.list(3);
    expect(listed.map((m) => m.id)).toEqual([ids[4], ids[3], ids[2]]);
    expect(listed[0]).toMatchObject({
      status: "disabled",
      statusReason: "operator",
      teamName: "Team One",
      scopes: ["chat:write", "users:read"],
      isEnterpriseInstall: false,
    });
    for (const m of listed) expect(m).not.toHaveProperty("sealed");
    expect(await h.store.installations.list(0)).toEqual([]);
  });

  it("refuses rows it must not hold, and a failing audit write leaves nothing behind", async () => {
    const h = await be.harness();
    const ok = installation(h.vault);
    const refused = [
      { ...ok, status: "uninstalled" as const },
      { ...ok, sealed: null },
      { ...ok, teamId: null },
      { ...orgInstallation(h.vault, "E1"), enterpriseId: null },
      { ...ok, scopes: ["chat:write", "not a scope"] },
      { ...ok, scopes: Array.from({ length: 257 }, (_, k) => `s${k}:read`) },
      { ...ok, teamId: "T1'; DROP TABLE installations; --" },
      { ...ok, status: "disabled" as const, statusReason: null },
    ];
    for (const bad of refused) await expect(h.store.installations.upsert(bad, [])).rejects.toBeInstanceOf(StoreError);
    await expect(
      h.store.installations.upsert(ok, [{ at: 1, event: "installation_installed" }, BROKEN_AUDIT]),
    ).rejects.toThrow(be.errors.notNull);
    expect(await h.store.installations.get(ok.id)).toBeUndefined();
    expect(await h.store.audit.count()).toBe(0);
    // A reinstall whose audit fails keeps the previous installation as it was.
    await h.store.installations.upsert(ok, []);
    await expect(h.store.installations.upsert(installation(h.vault), [BROKEN_AUDIT])).rejects.toThrow();
    expect(await h.store.installations.find({ enterpriseId: null, teamId: "T1" })).toEqual(ok);
    await expect(h.store.installations.uninstall(ok.id, 5, [BROKEN_AUDIT])).rejects.toThrow();
    expect((await h.store.installations.get(ok.id))!.sealed).not.toBeNull();
  });

  it("sealed tokens moved to another row, or a row edited to name another tenant, do not decrypt (VaultError)", async () => {
    const h = await be.harness();
    const a = installation(h.vault, { teamId: "T1", enterpriseId: "E1" });
    const b = installation(h.vault, { teamId: "T2", enterpriseId: "E1" });
    await h.store.installations.upsert(a, []);
    await h.store.installations.upsert(b, []);
    const open = async (id: string) => {
      const i = (await h.store.installations.get(id))!;
      return () => h.vault.openInstallation(i.sealed, i);
    };
    expect((await open(b.id))()).toMatchObject({ botToken: expect.stringMatching(/^xoxb-/) });
    // Copy A's ciphertext onto B's row, column by column, as someone with write access could.
    await h.exec(
      `UPDATE installations SET key_id = (SELECT key_id FROM installations WHERE id = ?), token_nonce = (SELECT token_nonce FROM installations WHERE id = ?),
       token_ct = (SELECT token_ct FROM installations WHERE id = ?), token_tag = (SELECT token_tag FROM installations WHERE id = ?) WHERE id = ?`,
      a.id,
      a.id,
      a.id,
      a.id,
      b.id,
    );
    expect(await open(b.id)).toThrow(expect.objectContaining({ name: "VaultError", code: "undecryptable" }));
    // Each bound column of A, edited in place (the CHECKs still hold), makes A's tokens undecryptable.
    const edits = [
      "UPDATE installations SET team_id = 'T9' WHERE id = ?",
      "UPDATE installations SET is_enterprise_install = 1 WHERE id = ?",
      "UPDATE installations SET enterprise_id = 'E2' WHERE id = ?",
      "UPDATE installations SET app_id = 'A0OTHER' WHERE id = ?",
    ];
    for (const sql of edits) {
      const { team_id, is_enterprise_install, enterprise_id, app_id } = (
        await h.rows<Record<string, unknown>>(
          "SELECT team_id, is_enterprise_install, enterprise_id, app_id FROM installations WHERE id = ?",
          a.id,
        )
      )[0]!;
      expect(await open(a.id)).not.toThrow();
      await h.exec(sql, a.id);
      expect(await open(a.id), sql).toThrow(VaultError);
      await h.exec(
        "UPDATE installations SET team_id = ?, is_enterprise_install = ?, enterprise_id = ?, app_id = ? WHERE id = ?",
        team_id,
        is_enterprise_install,
        enterprise_id,
        app_id,
        a.id,
      );
    }
    expect(await open(a.id)).not.toThrow();
  });

  it("two stores installing the same team at once leave exactly one live row, each install replacing the one before", async () => {
    const h = await be.harness();
    const other = await h.reopen();
    const drafts = Array.from({ length: 6 }, (_, k) =>
      installation(h.vault, { installedAt: 1_000 + k, updatedAt: 1_000 + k }),
    );
    const previous: (string | undefined)[] = [];
    await Promise.all(
      drafts.map((d, k) =>
        (k % 2 ? other : h.store).installations.upsert(d, (prev) => {
          previous.push(prev?.id);
          return [];
        }),
      ),
    );
    const live = await h.rows<{ id: string }>("SELECT id FROM installations WHERE status <> 'uninstalled'");
    expect(live).toHaveLength(1);
    // Each install replaced the one before it: a chain, no install lost to a unique-index failure.
    expect(previous.filter((p) => p === undefined)).toHaveLength(1);
    expect(new Set(previous.filter(Boolean)).size).toBe(5);
    expect(previous).not.toContain(live[0]!.id);
  });

  it("Store.reencryptAll re-seals connections and installations in one transaction, or changes nothing", async () => {
    const h = await be.harness();
    const c = await h.lifecycle.create(threadInput("U1", "tok-1"));
    const i = installation(h.vault);
    const gone = installation(h.vault, { teamId: "T2" });
    for (const x of [i, gone]) await h.store.installations.upsert(x, []);
    await h.store.installations.uninstall(gone.id, 5, []);
    const nonces = async () => ({
      c: (await h.store.connections.get(c.id))!.sealed!.nonce.toString("hex"),
      i: (await h.store.installations.get(i.id))!.sealed!.nonce.toString("hex"),
    });
    const before = await nonces();
    const audit = { at: 7, event: "keys_rotated" as const, decision: h.vault.primaryKeyId, actor: "cli:test" };
    // The installation's reseal fails after the connection's succeeded: both stay as they were.
    const failing: Resealers = {
      connection: (row) => h.vault.reseal(row.sealed, bindingOf(row)),
      installation: () => {
        throw new VaultError("undecryptable", "tampered");
      },
    };
    await expect(h.store.reencryptAll(failing, audit)).rejects.toMatchObject({ code: "undecryptable" });
    expect(await nonces()).toEqual(before);
    expect(await h.store.audit.count({ event: "keys_rotated" })).toBe(0);
    const counts = await h.store.reencryptAll(
      { connection: failing.connection, installation: (row) => h.vault.resealInstallation(row.sealed, row) },
      audit,
    );
    expect(counts).toEqual({ connections: 1, installations: 1 });
    const after = await nonces();
    expect(after.c).not.toBe(before.c);
    expect(after.i).not.toBe(before.i);
    const back = (await h.store.installations.get(i.id))!;
    expect(h.vault.openInstallation(back.sealed, back)).toEqual(h.vault.openInstallation(i.sealed, i));
    expect(await h.store.audit.count({ event: "keys_rotated" })).toBe(1);
  });

  it("two stores handling the same uninstall or tokens_revoked at once apply it once, audited once", async () => {
    const h = await be.harness();
    const other = await h.reopen();
    const a = installation(h.vault, { teamId: "T1" });
    const b = installation(h.vault, { teamId: "T2" });
    for (const i of [a, b]) await h.store.installations.upsert(i, []);
    const disable = (s: typeof h.store) =>
      s.installations.setStatus(a.id, "disabled", "tokens_revoked", 5, [
        { at: 5, event: "installation_disabled", teamId: "T1" },
      ]);
    const uninstall = (s: typeof h.store) =>
      s.installations.uninstall(b.id, 6, [{ at: 6, event: "installation_uninstalled", teamId: "T2" }]);
    const results = await Promise.all([disable(h.store), disable(other), uninstall(h.store), uninstall(other)]);
    expect([results[0], results[1]].sort()).toEqual([false, true]);
    expect([results[2], results[3]].sort()).toEqual([false, true]);
    expect(await h.store.audit.count({ event: "installation_disabled" })).toBe(1);
    expect(await h.store.audit.count({ event: "installation_uninstalled" })).toBe(1);
  });

  it("a reinstall re-enables a row disabled by tokens_revoked, but an operator's disable survives it", async () => {
    const h = await be.harness();
    const revoked = installation(h.vault, { teamId: "T1" });
    const barred = installation(h.vault, { teamId: "T2" });
    for (const i of [revoked, barred]) await h.store.installations.upsert(i, []);
    await h.store.installations.setStatus(revoked.id, "disabled", "tokens_revoked", 5, []);
    await h.store.installations.setStatus(barred.id, "disabled", "operator", 5, []);
    const again1 = await h.store.installations.upsert(installation(h.vault, { teamId: "T1" }), []);
    const again2 = await h.store.installations.upsert(installation(h.vault, { teamId: "T2" }), []);
    expect(again1).toMatchObject({ status: "active", statusReason: null });
    expect(again2).toMatchObject({ status: "disabled", statusReason: "operator" });
    expect(await h.store.installations.find({ enterpriseId: null, teamId: "T2" })).toMatchObject({
      id: again2.id,
      status: "disabled",
    });
    // Its new tokens are stored all the same, for when the operator enables it.
    expect(h.vault.openInstallation(again2.sealed, again2).botToken).toMatch(/^xoxb-/);
  });
});
