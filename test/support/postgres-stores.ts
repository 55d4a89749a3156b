import { afterAll, afterEach, beforeAll } from "vitest";
import { openPostgresStore, type PostgresStore } from "../../src/store/postgres/pg-store.js";
import { type PgCluster, startPostgres } from "./postgres.js";

/** What a test file gets from postgresStores(): its server, fresh schemas, and stores closed after each test. */
export interface PostgresStores {
  readonly cluster: PgCluster;
  /** A fresh schema of the file's database: its URL. */
  schema(): Promise<string>;
  /** A store on `url`, as one replica holds it; closed after the test. */
  store(url: string): Promise<PostgresStore>;
  /** The stores opened by the running test, in order. */
  readonly opened: readonly PostgresStore[];
}

/**
 * One real PostgreSQL for a test file (started before its tests, stopped after them) with one
 * database, and the stores its tests open. Call at the top level of the file: it registers the hooks.
 */
export function postgresStores(): PostgresStores {
  let cluster: PgCluster | undefined;
  let databaseUrl = "";
  const opened: PostgresStore[] = [];
  beforeAll(async () => {
    cluster = await startPostgres();
    databaseUrl = await cluster.createDatabase();
  });
  afterEach(async () => {
    for (const s of opened.splice(0).reverse()) await s.close();
  });
  afterAll(async () => {
    await cluster?.stop();
  });
  const running = (): PgCluster => {
    if (!cluster) throw new Error("PostgreSQL is not started: use postgresStores() at the top level of the file");
    return cluster;
  };
  return {
    get cluster() {
      return running();
    },
    schema: () => running().createSchema(databaseUrl),
    async store(url) {
      const { store } = await openPostgresStore({ url });
      opened.push(store);
      return store;
    },
    opened,
  };
}
