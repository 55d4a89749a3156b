import type { AuditEvent } from "../../audit/event.js";
import type { Approval } from "../records.js";
import * as ops from "../sql/approvals.js";
import { POSTGRES } from "../sql/dialect.js";
import type { Program } from "../sql/program.js";
import type { ApprovalRepo } from "../store.js";
import type { PgDb } from "./pg-db.js";
import { runPg } from "./pg-program.js";

/** PostgreSQL approvals repository: the shared statements of src/store/sql/approvals.ts, one transaction a write. */
export class PgApprovalRepo implements ApprovalRepo {
  constructor(private readonly db: PgDb) {}
  private write<T>(p: Program<T>): Promise<T> {
    return this.db.tx((q) => runPg(q, this.db.lockKeys, p));
  }
  private read<T>(p: Program<T>): Promise<T> {
    return runPg(this.db, this.db.lockKeys, p);
  }
  async create(a: Approval, audit: readonly AuditEvent[]): Promise<void> {
    await this.write(ops.createApproval(a, audit));
  }
  async get(id: string): Promise<Approval | undefined> {
    return this.read(ops.approvalBy("id", id));
  }
  async getByNonce(nonce: string): Promise<Approval | undefined> {
    return this.read(ops.approvalBy("nonce", nonce));
  }
  async decide(id: string, d: ops.Decision, audit: readonly AuditEvent[]): Promise<boolean> {
    return this.write(ops.decideApproval(id, d, audit));
  }
  async consume(id: string, argsHash: string, _at: number, audit: readonly AuditEvent[]): Promise<boolean> {
    return this.write(ops.consumeApproval(id, argsHash, audit));
  }
  async expire(id: string, at: number, audit: readonly AuditEvent[]): Promise<boolean> {
    return this.write(ops.expireApproval(id, at, audit));
  }
  async expirePending(now: number, all = false): Promise<Approval[]> {
    return this.write(ops.expirePendingApprovals(now, all));
  }
  async list(filter: ops.ApprovalFilter): Promise<Approval[]> {
    return this.read(ops.listApprovals(filter, POSTGRES));
  }
  async setCard(id: string, channel: string, ts: string): Promise<void> {
    // One statement: the pool's autocommit is its transaction.
    await this.read(ops.setApprovalCard(id, channel, ts));
  }
}
