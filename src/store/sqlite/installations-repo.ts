import type { AuditEvent } from "../../audit/event.js";
import type { SealedSecret } from "../../vault/aead.js";
import type {
  Installation,
  InstallationMeta,
  InstallationRepo,
  InstallationStatus,
  TenantQuery,
} from "../installation-records.js";
import { checkInstallation, checkStatusReason } from "../installation-rows.js";
import { SQLITE } from "../sql/dialect.js";
import * as ops from "../sql/installations.js";
import type { Program } from "../sql/program.js";
import { type Db, DEFAULT_LOCK_WAIT, type LockWait, writeTx } from "./db.js";
import { SqliteRunner } from "./sqlite-program.js";

/** SQLite installations repository: the shared statements of src/store/sql/installations.ts. */
export class SqliteInstallationRepo implements InstallationRepo {
  private readonly runner: SqliteRunner;

  constructor(
    private readonly db: Db,
    private readonly wait: LockWait = DEFAULT_LOCK_WAIT,
  ) {
    this.runner = new SqliteRunner(db);
  }

  private write<T>(p: Program<T>): Promise<T> {
    return writeTx(this.db, () => this.runner.run(p), this.wait);
  }

  async upsert(i: Installation, audit: ops.UpsertAudit): Promise<Installation> {
    checkInstallation(i);
    return this.write(ops.upsertInstallation(i, audit));
  }

  async get(id: string): Promise<Installation | undefined> {
    return this.runner.run(ops.installationById(id));
  }

  async find(q: TenantQuery): Promise<Installation | undefined> {
    return this.runner.run(ops.findInstallation(q));
  }

  async list(limit: number): Promise<InstallationMeta[]> {
    return this.runner.run(ops.listInstallations(limit, SQLITE));
  }

  async countLive(): Promise<number> {
    return this.runner.run(ops.countLiveInstallations());
  }

  async setStatus(
    id: string,
    status: Exclude<InstallationStatus, "uninstalled">,
    reason: string | null,
    at: number,
    audit: readonly AuditEvent[],
  ): Promise<boolean> {
    checkStatusReason(status, reason);
    return this.write(ops.setInstallationStatus(id, status, reason, at, audit));
  }

  async updateTokens(
    id: string,
    sealed: SealedSecret,
    tokenExpiresAt: number | null,
    at: number,
    audit: readonly AuditEvent[],
  ): Promise<boolean> {
    return this.write(ops.updateInstallationTokens(id, sealed, tokenExpiresAt, at, audit));
  }

  async uninstall(id: string, at: number, audit: readonly AuditEvent[]): Promise<boolean> {
    return this.write(ops.uninstallInstallation(id, at, audit));
  }

  async reencryptAll(reseal: ops.Reseal, audit: AuditEvent): Promise<number> {
    return this.write(ops.reencryptAllInstallations(reseal, audit, SQLITE));
  }

  /** Re-seals every row holding tokens; must run inside a write transaction (Store.reencryptAll shares it). */
  reencryptInTx(reseal: ops.Reseal): number {
    return this.runner.run(ops.reencryptInstallations(reseal, SQLITE));
  }
}
