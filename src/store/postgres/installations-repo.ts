import type { AuditEvent } from "../../audit/event.js";
import type { SealedSecret } from "../../vault/aead.js";
import type {
  Installation,
  InstallationMeta,
  InstallationRepo,
  InstallationStatus,
  TenantQuery,
} from "../installation-records.js";
import {
  checkInstallation,
  checkStatusReason,
  INSTALLATION_COLUMNS,
  INSTALLATION_META_COLUMNS,
  type InstallationRow,
  installationValues,
  LIVE_INSTALLATION,
  reinstalled,
  sameKeyValue,
  sameKeyWhere,
  toInstallation,
  toInstallationMeta,
} from "../installation-rows.js";
import { writeAudit } from "./audit-repo.js";
import { xactLock } from "./lock-keys.js";
import type { PgDb, Sql } from "./pg-db.js";

const WIPE = "key_id = NULL, token_nonce = NULL, token_ct = NULL, token_tag = NULL, token_expires_at = NULL";

/** `?` placeholders of the shared SQL to PostgreSQL's `$n`, numbered from `from`. */
function dollars(sql: string, from = 1): string {
  let n = from - 1;
  return sql.replace(/\?/g, () => `$${++n}`);
}

/** PostgreSQL installations: the same contract as SQLite's; installs of one key are serialised across replicas. */
export class PgInstallationRepo implements InstallationRepo {
  constructor(private readonly db: PgDb) {}

  async upsert(
    i: Installation,
    audit: readonly AuditEvent[] | ((previous: InstallationMeta | undefined) => readonly AuditEvent[]),
  ): Promise<Installation> {
    checkInstallation(i);
    const key = sameKeyValue(i);
    return this.db.tx(async (q) => {
      // Two replicas finishing installs of one team at once: the second waits, then replaces the first.
      await xactLock(q, this.db.lockKeys, `installation:${i.isEnterpriseInstall ? "enterprise" : "team"}:${key}`);
      const prev = (
        await q.query<InstallationRow>(
          `SELECT ${INSTALLATION_META_COLUMNS} FROM installations WHERE ${dollars(sameKeyWhere(i))}`,
          [key],
        )
      ).rows[0];
      await q.query(
        `DELETE FROM installations WHERE ${i.isEnterpriseInstall ? "is_enterprise_install = 1 AND enterprise_id = $1" : "is_enterprise_install = 0 AND team_id = $1"}`,
        [key],
      );
      const previous = prev ? toInstallationMeta(prev) : undefined;
      const values = installationValues(reinstalled(i, previous));
      await q.query(
        `INSERT INTO installations (${INSTALLATION_COLUMNS}) VALUES (${values.map((_, k) => `$${k + 1}`).join(", ")})`,
        values,
      );
      await writeAudit(q, typeof audit === "function" ? audit(previous) : audit);
      return toInstallation(
        (await q.query<InstallationRow>("SELECT * FROM installations WHERE id = $1", [i.id])).rows[0]!,
      );
    });
  }

  async get(id: string): Promise<Installation | undefined> {
    const r = (await this.db.query<InstallationRow>("SELECT * FROM installations WHERE id = $1", [id])).rows[0];
    return r ? toInstallation(r) : undefined;
  }

  async find(q: TenantQuery): Promise<Installation | undefined> {
    if (q.enterpriseId !== null) {
      const org = (
        await this.db.query<InstallationRow>(
          `SELECT * FROM installations WHERE is_enterprise_install = 1 AND enterprise_id = $1 AND ${LIVE_INSTALLATION}`,
          [q.enterpriseId],
        )
      ).rows[0];
      if (org) return toInstallation(org);
    }
    if (q.teamId === null) return undefined;
    const team = (
      await this.db.query<InstallationRow>(
        `SELECT * FROM installations WHERE is_enterprise_install = 0 AND team_id = $1 AND ${LIVE_INSTALLATION}`,
        [q.teamId],
      )
    ).rows[0];
    return team ? toInstallation(team) : undefined;
  }

  async list(limit: number): Promise<InstallationMeta[]> {
    const n = Math.max(0, Math.min(Math.floor(limit), 100_000));
    // Ties by id bytewise, as SQLite orders them.
    const rows = (
      await this.db.query<InstallationRow>(
        `SELECT ${INSTALLATION_META_COLUMNS} FROM installations WHERE ${LIVE_INSTALLATION} ORDER BY installed_at DESC, id COLLATE "C" DESC LIMIT $1`,
        [n],
      )
    ).rows;
    return rows.map(toInstallationMeta);
  }

  async countLive(): Promise<number> {
    return (
      await this.db.query<{ n: number }>(`SELECT count(*)::bigint AS n FROM installations WHERE ${LIVE_INSTALLATION}`)
    ).rows[0]!.n;
  }

  async setStatus(
    id: string,
    status: Exclude<InstallationStatus, "uninstalled">,
    reason: string | null,
    at: number,
    audit: readonly AuditEvent[],
  ): Promise<boolean> {
    checkStatusReason(status, reason);
    return this.changed(
      "UPDATE installations SET status = $1, status_reason = $2, updated_at = $3 WHERE id = $4 AND status <> 'uninstalled' AND NOT (status = $1 AND status_reason IS NOT DISTINCT FROM $2)",
      [status, reason, at, id],
      audit,
    );
  }

  async updateTokens(
    id: string,
    sealed: SealedSecret,
    tokenExpiresAt: number | null,
    at: number,
    audit: readonly AuditEvent[],
  ): Promise<boolean> {
    return this.changed(
      "UPDATE installations SET key_id = $1, token_nonce = $2, token_ct = $3, token_tag = $4, token_expires_at = $5, updated_at = $6 WHERE id = $7 AND status = 'active'",
      [sealed.keyId, sealed.nonce, sealed.ciphertext, sealed.tag, tokenExpiresAt, at, id],
      audit,
    );
  }

  async uninstall(id: string, at: number, audit: readonly AuditEvent[]): Promise<boolean> {
    return this.changed(
      `UPDATE installations SET status = 'uninstalled', status_reason = NULL, updated_at = $1, ${WIPE} WHERE id = $2 AND ${LIVE_INSTALLATION}`,
      [at, id],
      audit,
    );
  }

  /** One conditional UPDATE (a second replica's waits for the first and matches nothing) and its audit rows. */
  private changed(sql: string, params: unknown[], audit: readonly AuditEvent[]): Promise<boolean> {
    return this.db.tx(async (q) => {
      const ok = ((await q.query(sql, params)).rowCount ?? 0) === 1;
      if (ok) await writeAudit(q, audit);
      return ok;
    });
  }

  async reencryptAll(
    reseal: (i: Installation & { sealed: SealedSecret }) => SealedSecret,
    audit: AuditEvent,
  ): Promise<number> {
    return this.db.tx(async (q) => {
      const n = await reencryptInstallations(q, reseal);
      await writeAudit(q, [audit]);
      return n;
    });
  }
}

/** Re-seals every installation holding tokens with `q`, the client of an open transaction (a throw aborts it whole). */
export async function reencryptInstallations(
  q: Sql,
  reseal: (i: Installation & { sealed: SealedSecret }) => SealedSecret,
): Promise<number> {
  // FOR UPDATE: a replica refreshing a token meanwhile waits, so no row keeps a ciphertext under the old key.
  const rows = (
    await q.query<InstallationRow>(
      'SELECT * FROM installations WHERE token_ct IS NOT NULL ORDER BY id COLLATE "C" FOR UPDATE',
    )
  ).rows.map(toInstallation);
  for (const i of rows) {
    const next = reseal(i as Installation & { sealed: SealedSecret });
    await q.query(
      "UPDATE installations SET key_id = $2, token_nonce = $3, token_ct = $4, token_tag = $5 WHERE id = $1",
      [i.id, next.keyId, next.nonce, next.ciphertext, next.tag],
    );
  }
  return rows.length;
}
