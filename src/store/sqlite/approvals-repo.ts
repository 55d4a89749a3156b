import type { AuditEvent } from "../../audit/event.js";
import type { Approval } from "../records.js";
import * as ops from "../sql/approvals.js";
import { SQLITE } from "../sql/dialect.js";
import type { Program } from "../sql/program.js";
import type { ApprovalRepo } from "../store.js";
import { type Db, DEFAULT_LOCK_WAIT, type LockWait, writeTx } from "./db.js";
import { SqliteRunner } from "./sqlite-program.js";

/** SQLite approvals repository: the shared statements of src/store/sql/approvals.ts. */
export class SqliteApprovalRepo implements ApprovalRepo {
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
  async create(a: Approval, audit: readonly AuditEvent[]): Promise<void> {
    await this.write(ops.createApproval(a, audit));
  }
  async get(id: string): Promise<Approval | undefined> {
    return this.runner.run(ops.approvalBy("id", id));
  }
  async getByNonce(nonce: string): Promise<Approval | undefined> {
    return this.runner.run(ops.approvalBy("nonce", nonce));
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
    return this.runner.run(ops.listApprovals(filter, SQLITE));
  }
  async setCard(id: string, channel: string, ts: string): Promise<void> {
    await this.write(ops.setApprovalCard(id, channel, ts));
  }
}
