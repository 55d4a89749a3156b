import { POSTGRES } from "../sql/dialect.js";
import * as ops from "../sql/installations.js";
import type { PgDb, Sql } from "./pg-db.js";
import { pgDriver, runPg } from "./pg-program.js";

/** PostgreSQL installations repository: src/store/sql/installations.ts, installs of one key serialised by its lock. */
export class PgInstallationRepo extends ops.SqlInstallationRepo {
  constructor(db: PgDb) {
    super(pgDriver(db));
  }
}

/** Re-seals every installation holding tokens with `q`, an open transaction's client (Store.reencryptAll's). */
export function reencryptInstallations(q: Sql, reseal: ops.Reseal): Promise<number> {
  return runPg(q, null, ops.reencryptInstallations(reseal, POSTGRES));
}
