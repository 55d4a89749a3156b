// slaude_db_statements_total / slaude_db_transactions_total on PostgreSQL: the statements the store
// sends (autocommit and inside transactions) and the transactions it commits, read by /metrics the
// same way as SQLite's (storeCounts in the composition root); zeros would hide every database cost.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { storeCounts } from "../../src/app/store-factory.js";
import { parseRegistry } from "../../src/config/registry.js";
import { PrometheusMetrics } from "../../src/metrics/prometheus.js";
import { openPostgresStore } from "../../src/store/postgres/pg-store.js";
import { fixtureRegistryDoc } from "../integration/broker-harness.js";
import { type PgCluster, startPostgres } from "../support/postgres.js";

let cluster: PgCluster;
beforeAll(async () => {
  cluster = await startPostgres();
});
afterAll(async () => {
  await cluster?.stop();
});

const sample = (text: string, name: string) => Number(new RegExp(`^${name} (\\d+)$`, "m").exec(text)?.[1] ?? NaN);

describe("store statement counters on /metrics (PostgreSQL)", () => {
  it("count every statement the store sends and every transaction it commits", async () => {
    const { store } = await openPostgresStore({ url: await cluster.createDatabase() });
    try {
      const metrics = new PrometheusMetrics(parseRegistry(fixtureRegistryDoc(), "x"));
      metrics.watch({ db: () => storeCounts(store) });
      const first = (await metrics.text()).body;
      const s0 = sample(first, "slaude_db_statements_total");
      const t0 = sample(first, "slaude_db_transactions_total");
      await store.audit.append([{ at: 1, event: "admin_action", actor: "cli:test" }]);
      await store.audit.count();
      const second = (await metrics.text()).body;
      // One INSERT (in its transaction) and one SELECT count(*); one committed transaction.
      expect(sample(second, "slaude_db_statements_total") - s0).toBe(2);
      expect(sample(second, "slaude_db_transactions_total") - t0).toBe(1);
    } finally {
      await store.close();
    }
  });
});
