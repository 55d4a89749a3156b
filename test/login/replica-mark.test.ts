// A replica's liveness mark on PostgreSQL (issue 14): other replicas read "stopped" from a free mark
// and take that replica's login flows over, so a mark lost while the replica runs (its database
// connection ended by a failover or an operator) must be taken again at once, not left free.
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../src/clock/clock.js";
import { memoryLogger } from "../../src/log/logger.js";
import { LoginReplica, MARK_RETRY_MS } from "../../src/login/replica/replica.js";
import { PostgresTopology } from "../../src/topology/postgres/postgres-topology.js";
import { postgresStores } from "../support/postgres-stores.js";

const pg = postgresStores();

const markHolders = async () =>
  (await pg.cluster.superQuery("SELECT DISTINCT pid FROM pg_locks WHERE locktype = 'advisory' AND granted")).rows.map(
    (r) => Number(r.pid),
  );

describe("the login liveness mark", () => {
  it("is taken again at once when the server ends its connection; other replicas never stop seeing it for long", async () => {
    const url = await pg.schema();
    const [a, other] = [await pg.store(url), await pg.store(url)];
    const log = memoryLogger();
    const replica = new LoginReplica(new PostgresTopology(a.db).loginHolders, new ManualClock(), log);
    const self = "http://10.0.0.1:8080";
    await replica.start(self);
    expect(replica.marked).toBe(true);
    expect(await new PostgresTopology(other.db).loginHolders.alive(self)).toBe(true);
    const [pid] = await markHolders();
    await pg.cluster.superQuery(`SELECT pg_terminate_backend(${pid})`);
    await expect
      .poll(() => log.lines.some((l) => l.includes("replica liveness mark lost")), { timeout: 10_000 })
      .toBe(true);
    // No clock tick: the mark comes back on a new connection by itself.
    await expect.poll(() => replica.marked, { timeout: 10_000 }).toBe(true);
    const [again] = await markHolders();
    expect(again).not.toBe(pid);
    expect(await new PostgresTopology(other.db).loginHolders.alive(self)).toBe(true);
    await replica.close();
    expect(await new PostgresTopology(other.db).loginHolders.alive(self)).toBe(false);
  });

  it("when another process holds the URL, start retries on the clock and takes the mark once it is free", async () => {
    const url = await pg.schema();
    const [a, predecessor] = [await pg.store(url), await pg.store(url)];
    const self = "http://10.0.0.2:8080";
    const lingering = await new PostgresTopology(predecessor.db).loginHolders.hold(self, () => {});
    expect(lingering).toBeDefined();
    const clock = new ManualClock();
    const log = memoryLogger();
    const replica = new LoginReplica(new PostgresTopology(a.db).loginHolders, clock, log);
    await replica.start(self);
    expect(replica.marked).toBe(false);
    expect(log.lines.some((l) => l.includes("another process holds this replica's URL"))).toBe(true);
    await lingering!.release();
    clock.advance(MARK_RETRY_MS);
    await expect.poll(() => replica.marked, { timeout: 10_000 }).toBe(true);
    await replica.close();
  });
});
