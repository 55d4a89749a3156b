// migrate-store's copy carries the tenants: installations (sealed tokens still openable on
// PostgreSQL with the same key, tombstones as they were) and live OAuth states.
import { randomBytes } from "node:crypto";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { oauthStateHash } from "../../../src/store/installation-rows.js";
import { copySqliteToPostgres } from "../../../src/store/postgres/copy-from-sqlite.js";
import { openSqliteStore } from "../../../src/store/sqlite/sqlite-store.js";
import { KeyRing } from "../../../src/vault/keyring.js";
import { Vault } from "../../../src/vault/vault.js";
import { newKeyB64, TempDirs } from "../../support/foundation.js";
import { postgresStores } from "../../support/postgres-stores.js";
import { canaryTokens, installation, orgInstallation } from "../contract/installation-fixtures.js";

const pg = postgresStores();
const tmp = new TempDirs();
afterEach(() => tmp.cleanup());

describe("copySqliteToPostgres with installations", () => {
  it("copies installations and OAuth states; sealed tokens open on PostgreSQL with the same key", async () => {
    const vault = new Vault(KeyRing.fromBase64(newKeyB64()));
    const { store: src } = openSqliteStore(path.join(tmp.make(), "slaude.db"));
    const tokens = canaryTokens();
    const team = installation(vault, { tokens, tokenExpiresAt: 43_200_000 });
    const org = orgInstallation(vault, "E1");
    const gone = installation(vault, { teamId: "T2" });
    const state = oauthStateHash(randomBytes(16).toString("hex"));
    try {
      for (const i of [team, org, gone]) await src.installations.upsert(i, []);
      await src.installations.uninstall(gone.id, 9, []);
      await src.installations.setStatus(org.id, "disabled", "tokens_revoked", 10, []);
      await src.oauthStates.put(state, '{"scopes":[]}', 100_000, 1_000);
      const target = await pg.store(await pg.schema());
      const report = await copySqliteToPostgres(src.db, target.db);
      expect(report.tables.filter((t) => t.name === "installations" || t.name === "oauth_states")).toEqual([
        { name: "installations", source: 3, target: 3 },
        { name: "oauth_states", source: 1, target: 1 },
      ]);
      for (const i of [team, org, gone])
        expect(await target.installations.get(i.id)).toEqual(await src.installations.get(i.id));
      const copied = (await target.installations.find({ enterpriseId: null, teamId: "T1" }))!;
      expect(vault.openInstallation(copied.sealed, copied)).toEqual(tokens);
      expect(await target.installations.find({ enterpriseId: "E1", teamId: "T1" })).toMatchObject({
        id: org.id,
        status: "disabled",
      });
      expect(await target.oauthStates.take(state, 2_000)).toBe('{"scopes":[]}');
    } finally {
      await src.close();
    }
  });
});
