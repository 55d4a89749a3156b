import { SqlApprovalRepo } from "../sql/approvals.js";
import type { PgDb } from "./pg-db.js";
import { pgDriver } from "./pg-program.js";

/** PostgreSQL approvals repository, safe across replicas: src/store/sql/approvals.ts, one transaction a write. */
export class PgApprovalRepo extends SqlApprovalRepo {
  constructor(db: PgDb) {
    super(pgDriver(db));
  }
}
