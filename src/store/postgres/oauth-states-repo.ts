import { SqlOAuthStateRepo } from "../sql/oauth-states.js";
import type { PgDb } from "./pg-db.js";
import { pgDriver } from "./pg-program.js";

/** PostgreSQL OAuth install states, safe across replicas: src/store/sql/oauth-states.ts, one transaction a write. */
export class PgOAuthStateRepo extends SqlOAuthStateRepo {
  constructor(db: PgDb) {
    super(pgDriver(db));
  }
}
