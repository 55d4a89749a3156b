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
import { POSTGRES } from "../sql/dialect.js";
import * as ops from "../sql/installations.js";
import type { Program } from "../sql/program.js";
import type { PgDb, Sql } from "./pg-db.js";
import { runPg } from "./pg-program.js";

/** PostgreSQL installations repository: the shared statements of src/store/sql/installations.ts. */
export class PgInstallationRepo implements InstallationRepo {
  constructor(private readonly db: PgDb) {}

  /** One transaction; installs of one key are serialised across replicas by the program's lock. */
  private write<T>(p: Program<T>): Promise<T> {
    return this.db.tx((q) => runPg(q, this.db.lockKeys, p));
  }

  private read<T>(p: Program<T>): Promise<T> {
    return runPg(this.db, this.db.lockKeys, p);
  }

  async upsert(i: Installation, audit: ops.UpsertAudit): Promise<Installation> {
    checkInstallation(i);
    return this.write(ops.upsertInstallation(i, audit));
  }

  async get(id: string): Promise<Installation | undefined> {
    return this.read(ops.installationById(id));
  }

  async find(q: TenantQuery): Promise<Installation | undefined> {
    return this.read(ops.findInstallation(q));
  }

  async list(limit: number): Promise<InstallationMeta[]> {
    return this.read(ops.listInstallations(limit, POSTGRES));
  }

  async countLive(): Promise<number> {
    return this.read(ops.countLiveInstallations());
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
    return this.write(ops.reencryptAllInstallations(reseal, audit, POSTGRES));
  }
}

/** Re-seals every installation holding tokens with `q`, an open transaction's client (Store.reencryptAll's). */
export function reencryptInstallations(q: Sql, reseal: ops.Reseal): Promise<number> {
  return runPg(q, null, ops.reencryptInstallations(reseal, POSTGRES));
}
