import type { AuditEvent } from "../../audit/event.js";
import type { ThreadRef } from "../../domain/thread.js";
import type { Grant } from "../records.js";
import * as ops from "../sql/grants.js";
import type { GrantRepo } from "../store.js";
import { type Db, DEFAULT_LOCK_WAIT, type LockWait, writeTx } from "./db.js";
import { SqliteRunner } from "./sqlite-program.js";

/** SQLite grants repository: the shared statements of src/store/sql/grants.ts. */
export class SqliteGrantRepo implements GrantRepo {
  private readonly runner: SqliteRunner;
  constructor(
    private readonly db: Db,
    private readonly wait: LockWait = DEFAULT_LOCK_WAIT,
  ) {
    this.runner = new SqliteRunner(db);
  }
  async create(g: Omit<Grant, "revokedAt" | "revokedBy">, audit: readonly AuditEvent[]): Promise<Grant> {
    return writeTx(this.db, () => this.runner.run(ops.createGrant(g, audit)), this.wait);
  }
  async findLive(connectionId: string, borrowerUserId: string, t: ThreadRef): Promise<Grant | undefined> {
    return this.runner.run(ops.findLiveGrant(connectionId, borrowerUserId, t));
  }
  async get(id: string): Promise<Grant | undefined> {
    return this.runner.run(ops.grantById(id));
  }
  async list(f: ops.GrantFilter): Promise<Grant[]> {
    return this.runner.run(ops.listGrants(f));
  }
  async revoke(id: string, by: string, at: number, audit: readonly AuditEvent[]): Promise<boolean> {
    return writeTx(this.db, () => this.runner.run(ops.revokeGrant(id, by, at, audit)), this.wait);
  }
}
