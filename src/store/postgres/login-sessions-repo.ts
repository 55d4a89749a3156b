import type { AuditEvent } from "../../audit/event.js";
import type { LoginSession } from "../records.js";
import * as ops from "../sql/login-sessions.js";
import type { Program } from "../sql/program.js";
import type { LoginSessionRepo } from "../store.js";
import type { PgDb } from "./pg-db.js";
import { runPg } from "./pg-program.js";

/** PostgreSQL login sessions: the shared statements of src/store/sql/login-sessions.ts, one transaction a write. */
export class PgLoginSessionRepo implements LoginSessionRepo {
  constructor(private readonly db: PgDb) {}
  private write<T>(p: Program<T>): Promise<T> {
    return this.db.tx((q) => runPg(q, this.db.lockKeys, p));
  }
  async create(s: ops.NewLoginSession, audit: readonly AuditEvent[]): Promise<void> {
    await this.write(ops.createLoginSession(s, audit));
  }
  async get(id: string): Promise<LoginSession | undefined> {
    return runPg(this.db, null, ops.loginSessionBy("id", id));
  }
  async getByTokenHash(tokenHash: string): Promise<LoginSession | undefined> {
    return runPg(this.db, null, ops.loginSessionBy("token_hash", tokenHash));
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
