import { describe, expect, it } from "vitest";
import type { AuditEvent } from "../../../src/audit/event.js";
import { ManualClock } from "../../../src/clock/clock.js";
import {
  CallRateGate,
  type CallRateLimits,
  MemoryRateBuckets,
  type RateBuckets,
} from "../../../src/limits/call-rate.js";
import { type BucketState, takeToken } from "../../../src/limits/token-bucket.js";
import { PostgresTopology } from "../../../src/topology/postgres/postgres-topology.js";
import { postgresStores } from "../../support/postgres-stores.js";

// The call-rate buckets on a real PostgreSQL, shared by two topologies as two replicas hold them:
// one bucket per user and per team across replicas, exact under concurrency, the same rule as
// src/limits/token-bucket.ts (checked against it), and swept once full.

const pg = postgresStores();
const perMin = (n: number) => ({ burst: n, perMs: n / 60_000 });

async function replicas(limits: CallRateLimits) {
  const url = await pg.schema();
  const [a, b] = [new PostgresTopology((await pg.store(url)).db), new PostgresTopology((await pg.store(url)).db)];
  const clock = new ManualClock(1_700_000_000_000);
  const gate = (buckets: RateBuckets) => new CallRateGate({ buckets, limits, clock });
  return { clock, one: gate(a.rateBuckets), two: gate(b.rateBuckets), a, b };
}

describe("rate buckets on PostgreSQL (two replicas)", () => {
  it("two replicas share one bucket per user: the burst is spent across both, and the refusal names the same retry time", async () => {
    const { clock, one, two } = await replicas({ perUser: perMin(3), perTeam: perMin(100) });
    expect(await one.check("TA", "U1")).toEqual({ ok: true });
    expect(await two.check("TA", "U1")).toEqual({ ok: true });
    expect(await one.check("TA", "U1")).toEqual({ ok: true });
    expect(await two.check("TA", "U1")).toEqual({ ok: false, limit: "call_rate_user", retryAt: clock.now() + 20_000 });
    expect(await one.check("TA", "U1")).toEqual({ ok: false, limit: "call_rate_user", retryAt: clock.now() + 20_000 });
    // Team B (and another user of A) on the other replica: not slowed.
    expect(await two.check("TB", "U9")).toEqual({ ok: true });
    expect(await two.check("TA", "U2")).toEqual({ ok: true });
    clock.advance(20_000);
    expect(await two.check("TA", "U1")).toEqual({ ok: true });
  });

  it("concurrent calls on both replicas are granted exactly the burst, never more", async () => {
    const { one, two } = await replicas({ perUser: perMin(5), perTeam: perMin(1_000) });
    const results = await Promise.all(Array.from({ length: 24 }, (_, i) => (i % 2 ? one : two).check("TA", "U1")));
    expect(results.filter((r) => r.ok)).toHaveLength(5);
  });

  it("a team over its rate on one replica is over it on the other; a user refused by their own rate leaves the team's tokens", async () => {
    const { one, two } = await replicas({ perUser: perMin(2), perTeam: perMin(3) });
    await one.check("TA", "U1");
    await two.check("TA", "U1");
    for (let i = 0; i < 5; i++) expect((await one.check("TA", "U1")).ok).toBe(false);
    expect(await two.check("TA", "U2")).toEqual({ ok: true });
    const over = await one.check("TA", "U3");
    expect(over.ok === false && over.limit).toBe("call_rate_team");
    expect(await two.check("TB", "U3")).toEqual({ ok: true });
  });

  it("computes what the pure rule computes, step by step (times, fill levels, a clock gone back)", async () => {
    const { a } = await replicas({ perUser: perMin(1), perTeam: perMin(1) });
    const rate = { burst: 4, perMs: 4 / 60_000 };
    const memory = new MemoryRateBuckets();
    let state: BucketState | undefined;
    for (const now of [0, 0, 0, 0, 0, 7_000, 15_000, 15_001, 14_000, 60_000, 60_000, 200_000]) {
      const expected = takeToken(state, rate, now);
      state = expected.state;
      const got = await a.rateBuckets.take([{ key: "u:T:U", rate }], now);
      const mem = await memory.take([{ key: "u:T:U", rate }], now);
      expect(got.granted).toBe(expected.granted);
      expect(mem).toEqual(got);
      if (!got.granted && !expected.granted) expect(got).toMatchObject({ retryAt: expected.retryAt });
    }
  });

  it("the sweep deletes only buckets that have refilled completely (absent equals full)", async () => {
    const { a } = await replicas({ perUser: perMin(1), perTeam: perMin(1) });
    const rate = perMin(60);
    await a.rateBuckets.take([{ key: "u:T:old", rate }], 0);
    await a.rateBuckets.take([{ key: "u:T:new", rate }], 59_000);
    expect(await a.rateBuckets.sweep(60_000, 60_000)).toBe(0);
    expect(await a.rateBuckets.sweep(60_001, 60_000)).toBe(1);
    const left = await a.db.query<{ key: string }>("SELECT key FROM rate_buckets ORDER BY key");
    expect(left.rows.map((r) => r.key)).toEqual(["u:T:new"]);
  });

  it("a take with rows commits them exactly when granted, in one statement: refused, nothing is written or spent", async () => {
    const url = await pg.schema();
    const store = await pg.store(url);
    const topo = new PostgresTopology(store.db);
    const clock = new ManualClock(1_700_000_000_000);
    const gate = new CallRateGate({
      buckets: topo.rateBuckets,
      limits: { perUser: perMin(2), perTeam: perMin(100) },
      clock,
    });
    expect(gate.appendsWithTake).toBe(true);
    const started = (callId: string): AuditEvent => ({ at: clock.now(), event: "call_started", callId, teamId: "TA" });
    const rowsOf = async (callId: string) => (await store.audit.query({ callId })).map((r) => r.event);
    expect(await gate.checkAndAppend("TA", "U1", [started("call_a")])).toEqual({ ok: true });
    expect(await rowsOf("call_a")).toEqual(["call_started"]);
    // One statement (the first take also swept the table), counted as the commit it is.
    const before = { ...store.db.counts };
    expect((await gate.checkAndAppend("TA", "U1", [started("call_b")])).ok).toBe(true);
    expect(store.db.counts.statements - before.statements).toBe(1);
    expect(store.db.counts.transactions - before.transactions).toBe(1);
    expect(await rowsOf("call_b")).toEqual(["call_started"]);
    const team = async () =>
      (await store.db.query<{ tokens: number }>("SELECT tokens FROM rate_buckets WHERE key = 't:TA'")).rows[0]?.tokens;
    const teamTokens = await team();
    const refused = await gate.checkAndAppend("TA", "U1", [started("call_c")]);
    expect(refused).toEqual({ ok: false, limit: "call_rate_user", retryAt: clock.now() + 30_000 });
    expect(await rowsOf("call_c")).toEqual([]);
    // The user's refusal left the team's bucket as it was.
    expect(await team()).toBe(teamTokens);
    // A statement that fails (a row PostgreSQL refuses: text cannot hold a NUL) writes nothing and spends nothing.
    clock.advance(30_000);
    const bad: AuditEvent = { ...started("call_d"), tool: "a\u0000b" };
    await expect(gate.checkAndAppend("TA", "U1", [bad])).rejects.toThrow();
    expect(await rowsOf("call_d")).toEqual([]);
    expect(await gate.checkAndAppend("TA", "U1", [started("call_e")])).toEqual({ ok: true });
    expect(await rowsOf("call_e")).toEqual(["call_started"]);
  });
});
