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
import { makeAuditWriter } from "./audit-repo.js";
import { type Db, DEFAULT_LOCK_WAIT, type LockWait, writeTx } from "./db.js";

const WIPE = "key_id = NULL, token_nonce = NULL, token_ct = NULL, token_tag = NULL, token_expires_at = NULL";

/** SQLite installations: one live row per team install and per org-wide install (partial unique indexes), tombstones wiped. */
export class SqliteInstallationRepo implements InstallationRepo {
  private readonly audit: (events: readonly AuditEvent[]) => void;

  constructor(
    private readonly db: Db,
    private readonly wait: LockWait = DEFAULT_LOCK_WAIT,
  ) {
    this.audit = makeAuditWriter(db);
  }

  private row(id: string): Installation | undefined {
    const r = this.db.prepare("SELECT * FROM installations WHERE id = ?").get(id) as InstallationRow | undefined;
    return r ? toInstallation(r) : undefined;
  }

  async upsert(
    i: Installation,
    audit: readonly AuditEvent[] | ((previous: InstallationMeta | undefined) => readonly AuditEvent[]),
  ): Promise<Installation> {
    checkInstallation(i);
    return writeTx(
      this.db,
      () => {
        const key = sameKeyValue(i);
        const prev = this.db
          .prepare(`SELECT ${INSTALLATION_META_COLUMNS} FROM installations WHERE ${sameKeyWhere(i)}`)
          .get(key) as InstallationRow | undefined;
        // The replaced row goes with its ciphertext (secure_delete overwrites it); so do the key's tombstones.
        this.db
          .prepare(
            `DELETE FROM installations WHERE ${i.isEnterpriseInstall ? "is_enterprise_install = 1 AND enterprise_id = ?" : "is_enterprise_install = 0 AND team_id = ?"}`,
          )
          .run(key);
        const previous = prev ? toInstallationMeta(prev) : undefined;
        this.db
          .prepare(
            `INSERT INTO installations (${INSTALLATION_COLUMNS}) VALUES (${INSTALLATION_COLUMNS.split(",")
              .map(() => "?")
              .join(", ")})`,
          )
          .run(...installationValues(reinstalled(i, previous)));
        this.audit(typeof audit === "function" ? audit(previous) : audit);
        return this.row(i.id)!;
      },
      this.wait,
    );
  }

  async get(id: string): Promise<Installation | undefined> {
    return this.row(id);
  }

  async find(q: TenantQuery): Promise<Installation | undefined> {
    if (q.enterpriseId !== null) {
      const org = this.db
        .prepare(
          `SELECT * FROM installations WHERE is_enterprise_install = 1 AND enterprise_id = ? AND ${LIVE_INSTALLATION}`,
        )
        .get(q.enterpriseId) as InstallationRow | undefined;
      if (org) return toInstallation(org);
    }
    if (q.teamId === null) return undefined;
    const team = this.db
      .prepare(`SELECT * FROM installations WHERE is_enterprise_install = 0 AND team_id = ? AND ${LIVE_INSTALLATION}`)
      .get(q.teamId) as InstallationRow | undefined;
    return team ? toInstallation(team) : undefined;
  }

  async list(limit: number): Promise<InstallationMeta[]> {
    const n = Math.max(0, Math.min(Math.floor(limit), 100_000));
    const rows = this.db
      .prepare(
        `SELECT ${INSTALLATION_META_COLUMNS} FROM installations WHERE ${LIVE_INSTALLATION} ORDER BY installed_at DESC, id DESC LIMIT ?`,
      )
      .all(n) as InstallationRow[];
    return rows.map(toInstallationMeta);
  }

  async countLive(): Promise<number> {
    return (
      this.db.prepare(`SELECT count(*) AS n FROM installations WHERE ${LIVE_INSTALLATION}`).get() as { n: number }
    ).n;
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
      "UPDATE installations SET status = ?, status_reason = ?, updated_at = ? WHERE id = ? AND status <> 'uninstalled' AND NOT (status = ? AND status_reason IS ?)",
      [status, reason, at, id, status, reason],
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
      "UPDATE installations SET key_id = ?, token_nonce = ?, token_ct = ?, token_tag = ?, token_expires_at = ?, updated_at = ? WHERE id = ? AND status = 'active'",
      [sealed.keyId, sealed.nonce, sealed.ciphertext, sealed.tag, tokenExpiresAt, at, id],
      audit,
    );
  }

  async uninstall(id: string, at: number, audit: readonly AuditEvent[]): Promise<boolean> {
    return this.changed(
      `UPDATE installations SET status = 'uninstalled', status_reason = NULL, updated_at = ?, ${WIPE} WHERE id = ? AND ${LIVE_INSTALLATION}`,
      [at, id],
      audit,
    );
  }

  /** One conditional UPDATE and, when it matched, its audit rows, in one transaction. */
  private changed(sql: string, params: unknown[], audit: readonly AuditEvent[]): Promise<boolean> {
    const st = this.db.prepare(sql);
    return writeTx(
      this.db,
      () => {
        const ok = st.run(...params).changes === 1;
        if (ok) this.audit(audit);
        return ok;
      },
      this.wait,
    );
  }

  async reencryptAll(
    reseal: (i: Installation & { sealed: SealedSecret }) => SealedSecret,
    audit: AuditEvent,
  ): Promise<number> {
    return writeTx(
      this.db,
      () => {
        const n = this.reencryptInTx(reseal);
        this.audit([audit]);
        return n;
      },
      this.wait,
    );
  }

  /** Re-seals every row holding tokens; must run inside a write transaction (a throw aborts it whole). */
  reencryptInTx(reseal: (i: Installation & { sealed: SealedSecret }) => SealedSecret): number {
    const rows = (
      this.db.prepare("SELECT * FROM installations WHERE token_ct IS NOT NULL ORDER BY id").all() as InstallationRow[]
    ).map(toInstallation);
    const update = this.db.prepare(
      "UPDATE installations SET key_id = ?, token_nonce = ?, token_ct = ?, token_tag = ? WHERE id = ?",
    );
    for (const i of rows) {
      const next = reseal(i as Installation & { sealed: SealedSecret });
      update.run(next.keyId, next.nonce, next.ciphertext, next.tag, i.id);
    }
    return rows.length;
  }
}
