import type { AuditEvent } from "../../audit/event.js";
import type { LoginSession } from "../records.js";
import * as ops from "../sql/login-sessions.js";
import type { Program } from "../sql/program.js";
import type { LoginSessionRepo } from "../store.js";
import { type Db, DEFAULT_LOCK_WAIT, type LockWait, writeTx } from "./db.js";
import { SqliteRunner } from "./sqlite-program.js";

/** SQLite login sessions: the shared statements of src/store/sql/login-sessions.ts. */
export class SqliteLoginSessionRepo implements LoginSessionRepo {
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
  async create(s: ops.NewLoginSession, audit: readonly AuditEvent[]): Promise<void> {
    await this.write(ops.createLoginSession(s, audit));
  }
  async get(id: string): Promise<LoginSession | undefined> {
    return this.runner.run(ops.loginSessionBy("id", id));
  }
  async getByTokenHash(tokenHash: string): Promise<LoginSession | undefined> {
    return this.runner.run(ops.loginSessionBy("token_hash", tokenHash));
  }
  async open(
    tokenHash: string,
    viewerHash: string,
    at: number,
    flowExpiresAt: number,
    audit: readonly AuditEvent[],
  ): Promise<LoginSession | undefined> {
    return this.write(ops.openLoginSession(tokenHash, viewerHash, at, flowExpiresAt, audit));
  }
  async end(
    id: string,
    status: ops.LoginEnd,
    at: number,
    connectionId: string | null,
    audit: readonly AuditEvent[],
  ): Promise<boolean> {
    return this.write(ops.endLoginSession(id, status, at, connectionId, audit));
  }
  async expireDue(now: number): Promise<LoginSession[]> {
    return this.write(ops.expireLoginSessions(now));
  }
}
