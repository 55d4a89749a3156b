import { afterEach, describe, expect, it } from "vitest";
import { parseRegistry } from "../../src/config/registry.js";
import { PrometheusMetrics } from "../../src/metrics/prometheus.js";
import { dbCounts } from "../../src/store/sqlite/db.js";
import { fixtureRegistryDoc } from "../integration/broker-harness.js";
import { harness, TempDirs } from "../support/foundation.js";

// slaude_db_statements_total / slaude_db_transactions_total: the store's real counters (a real
// SQLite file) exposed on /metrics, each scrape adding what ran since the previous one.

const tmp = new TempDirs();
afterEach(() => tmp.cleanup());

const sample = (text: string, name: string) => Number(new RegExp(`^${name} (\\d+)$`, "m").exec(text)?.[1] ?? NaN);

describe("store statement counters on /metrics", () => {
  it("count every statement and write transaction the store runs", async () => {
    const h = harness(tmp);
    const metrics = new PrometheusMetrics(parseRegistry(fixtureRegistryDoc(), "x"));
    metrics.watch({ db: () => dbCounts(h.store.db) });
    const first = (await metrics.text()).body;
    const s0 = sample(first, "slaude_db_statements_total");
    const t0 = sample(first, "slaude_db_transactions_total");
    await h.store.audit.append([{ at: 1, event: "admin_action", actor: "cli:test" }]);
    await h.store.audit.count();
    const second = (await metrics.text()).body;
    // One INSERT and one SELECT count(*); one write transaction.
    expect(sample(second, "slaude_db_statements_total") - s0).toBe(2);
    expect(sample(second, "slaude_db_transactions_total") - t0).toBe(1);
  });
});
