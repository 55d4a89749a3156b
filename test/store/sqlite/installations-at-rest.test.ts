// What a copy of the SQLite files shows of the tenants' Slack tokens: nothing. Canary bot and
// refresh tokens go through install, reinstall, refresh and uninstall with their audit rows; the
// main file, its WAL and its shared-memory file never hold `xoxb-` or `xoxe-` (a control marker in
// a plaintext column is found in the same bytes, so the scan can fail).
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { oauthStateHash } from "../../../src/store/installation-rows.js";
import { harness, TempDirs } from "../../support/foundation.js";
import { canaryTokens, installation } from "../contract/installation-fixtures.js";

const tmp = new TempDirs();
afterEach(() => tmp.cleanup());

/** Every byte SQLite wrote for the database: the main file, the WAL and the shared-memory index. */
function rawBytes(dbPath: string): Buffer {
  return Buffer.concat(
    [dbPath, `${dbPath}-wal`, `${dbPath}-shm`].filter((f) => existsSync(f)).map((f) => readFileSync(f)),
  );
}

describe("installations at rest (SQLite)", () => {
  it("the database file, WAL included, never holds a Slack token in clear", async () => {
    const h = harness(tmp);
    const marker = `CONTROL-${randomBytes(8).toString("hex")}`;
    const first = canaryTokens();
    const a = installation(h.vault, { teamName: marker, tokens: first });
    await h.store.installations.upsert(a, [{ at: 1, event: "installation_installed", teamId: "T1", actor: "U0ADMIN" }]);
    const second = canaryTokens();
    const b = installation(h.vault, { teamName: marker, tokens: second, scopes: ["chat:write", "im:write"] });
    await h.store.installations.upsert(b, (prev) => [
      { at: 2, event: prev ? "installation_updated" : "installation_installed", teamId: "T1" },
    ]);
    const refreshed = canaryTokens();
    expect(
      await h.store.installations.updateTokens(b.id, h.vault.sealInstallation(refreshed, b), 43_200_000, 3, [
        { at: 3, event: "installation_token_refreshed", teamId: "T1" },
      ]),
    ).toBe(true);
    const org = installation(h.vault, { teamId: null, enterpriseId: "E1", isEnterpriseInstall: true });
    await h.store.installations.upsert(org, []);
    expect(
      await h.store.installations.uninstall(org.id, 4, [{ at: 4, event: "installation_uninstalled", teamId: "E1" }]),
    ).toBe(true);
    const state = randomBytes(24).toString("base64url");
    await h.store.oauthStates.put(oauthStateHash(state), "{}", 10_000, 5);

    // The rows are in the WAL now (no checkpoint yet): the scan must see them there.
    const inWal = rawBytes(h.dbPath);
    expect(existsSync(`${h.dbPath}-wal`)).toBe(true);
    expect(inWal.includes(Buffer.from(marker))).toBe(true);
    h.store.db.pragma("wal_checkpoint(TRUNCATE)");
    const checkpointed = rawBytes(h.dbPath);
    expect(checkpointed.includes(Buffer.from(marker))).toBe(true);
    for (const bytes of [inWal, checkpointed]) {
      for (const needle of [
        "xoxb-",
        "xoxe-",
        "xoxe.",
        state,
        ...Object.values(first),
        ...Object.values(second),
        ...Object.values(refreshed),
      ]) {
        expect(bytes.includes(Buffer.from(needle)), needle).toBe(false);
      }
    }
    // And the tokens are still there for their own row.
    const stored = (await h.store.installations.get(b.id))!;
    expect(h.vault.openInstallation(stored.sealed, stored)).toEqual(refreshed);
    await h.store.close();
  });
});
