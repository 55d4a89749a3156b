import type { AuditEvent } from "../../audit/event.js";
import type { ThreadRef } from "../../domain/thread.js";
import type { Grant } from "../records.js";
import * as ops from "../sql/grants.js";
import type { GrantRepo } from "../store.js";
import type { PgDb } from "./pg-db.js";
import { runPg } from "./pg-program.js";

/** PostgreSQL grants repository: the shared statements of src/store/sql/grants.ts. */
export class PgGrantRepo implements GrantRepo {
  constructor(private readonly db: PgDb) {}
  async create(g: Omit<Grant, "revokedAt" | "revokedBy">, audit: readonly AuditEvent[]): Promise<Grant> {
    return this.db.tx((q) => runPg(q, this.db.lockKeys, ops.createGrant(g, audit)));
  }
  async findLive(connectionId: string, borrowerUserId: string, t: ThreadRef): Promise<Grant | undefined> {
    return runPg(this.db, this.db.lockKeys, ops.findLiveGrant(connectionId, borrowerUserId, t));
  }
  async get(id: string): Promise<Grant | undefined> {
    return runPg(this.db, this.db.lockKeys, ops.grantById(id));
  }
  async list(f: ops.GrantFilter): Promise<Grant[]> {
    return runPg(this.db, this.db.lockKeys, ops.listGrants(f));
  }
  async revoke(id: string, by: string, at: number, audit: readonly AuditEvent[]): Promise<boolean> {
    return this.db.tx((q) => runPg(q, this.db.lockKeys, ops.revokeGrant(id, by, at, audit)));
  }
}
