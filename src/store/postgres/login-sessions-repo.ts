import { SqlLoginSessionRepo } from "../sql/login-sessions.js";
import type { PgDb } from "./pg-db.js";
import { pgDriver } from "./pg-program.js";

/** PostgreSQL login sessions, safe across replicas: src/store/sql/login-sessions.ts, one transaction a write. */
export class PgLoginSessionRepo extends SqlLoginSessionRepo {
  constructor(db: PgDb) {
    super(pgDriver(db));
  }
}
