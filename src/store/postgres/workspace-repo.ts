import { SqlWorkspaceRepo } from "../sql/workspace-repo.js";
import type { PgDb } from "./pg-db.js";
import { pgDriver } from "./pg-program.js";

/** PostgreSQL state of the local workspace, safe across replicas: src/store/sql/workspace-repo.ts. */
export class PgWorkspaceRepo extends SqlWorkspaceRepo {
  constructor(db: PgDb) {
    super(pgDriver(db));
  }
}
