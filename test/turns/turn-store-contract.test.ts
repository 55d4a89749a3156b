// The turn rules through the TurnStore port, against both adapters: memory (SQLite deployments) and
// PostgreSQL (a real cluster, a fresh schema per test). Then what only the shared adapter promises:
// a second store on the same database (another replica) sees every change at its next read,
// concurrent writers from two replicas lose nothing, idle threads are reaped, a bad row fails closed.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { openPostgresStore, type PostgresStore } from "../../src/store/postgres/pg-store.js";
import { PostgresTopology } from "../../src/topology/postgres/postgres-topology.js";
import type { PgTurnStore } from "../../src/topology/postgres/turns-repo.js";
import type { TurnLimits } from "../../src/turns/turn-rules.js";
import { MemoryTurnStore, type TurnStore } from "../../src/turns/turn-store.js";
import { type PgCluster, startPostgres } from "../support/postgres.js";

const T = { teamId: "T1", channelId: "C1", threadTs: "1700000000.000100" };
const OTHER = { ...T, threadTs: "1700000000.000200" };
const A = "UALICE01";
const B = "UBOB0002";
const NOW = 1_700_000_000_000;

let cluster: PgCluster | undefined;
let databaseUrl = "";
const open: PostgresStore[] = [];
beforeAll(async () => {
  cluster = await startPostgres();
  databaseUrl = await cluster.createDatabase();
});
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});
afterAll(async () => {
  await cluster?.stop();
});

/** A fresh schema, and `n` stores on it (each one what a replica holds). */
async function pgReplicas(
  n: number,
  limits: Partial<TurnLimits> = {},
): Promise<{ stores: PgTurnStore[]; pg: PostgresStore }> {
  if (!cluster) throw new Error("the test PostgreSQL did not start");
  const url = await cluster.createSchema(databaseUrl);
  const stores: PgTurnStore[] = [];
  for (let i = 0; i < n; i++) {
    const { store } = await openPostgresStore({ url });
    open.push(store);
    stores.push(new PostgresTopology(store.db).turns(limits));
  }
  return { stores, pg: open.at(-1)! };
}

const adapters: { name: string; make(limits?: Partial<TurnLimits>): Promise<TurnStore> }[] = [
  { name: "memory", make: async (limits = {}) => new MemoryTurnStore(limits) },
  { name: "postgres", make: async (limits = {}) => (await pgReplicas(1, limits)).stores[0]! },
];

describe.each(adapters)("turn rules on the $name adapter", ({ make }) => {
  it("names the thread of a turn id (POST /v1/turns/end checks its tenant first); an unknown id has none", async () => {
    const s = await make();
    const t = await s.set(T, A, NOW, { explicit: true });
    const o = await s.set(OTHER, B, NOW);
    expect(await s.threadOf(t.id)).toEqual(T);
    expect(await s.threadOf(o.id)).toEqual(OTHER);
    expect(await s.threadOf("turn_AAAAAAAAAAAAAAAAAAAAAAAA")).toBeUndefined();
  });

  it("a Slack message not newer than the watermark does not move the turn back; unserved threads and bad ts set nothing", async () => {
    const s = await make();
    expect(await s.fromSlack(T, A, "1700000100.000001", NOW)).toBeUndefined();
    expect(await s.isServed(T)).toBe(false);
    await s.markServed(T, NOW);
    expect(await s.isServed(T)).toBe(true);
    expect(await s.fromSlack(T, A, "1700000100.000001", NOW)).toBeDefined();
    expect(await s.fromSlack(T, B, "1700000200.000001", NOW)).toBeDefined();
    expect(await s.fromSlack(T, A, "1700000100.000001", NOW)).toBeUndefined();
    expect(await s.fromSlack(T, A, "1700000200.000001", NOW)).toBeUndefined();
    expect(await s.fromSlack(T, A, "yesterday", NOW)).toBeUndefined();
    expect(await s.current(T)).toBe(B);
    // A host report orders at its time: an older message delivered after it is ignored.
    await s.set(T, A, 1_700_000_300_000);
    expect(await s.fromSlack(T, B, "1700000299.999999", NOW)).toBeUndefined();
    expect(await s.resolve(T, undefined, NOW)).toEqual({ kind: "caller", userId: A });
  });

  it("explicit turns overlap until ended; implicit ones are superseded; ids of other threads are unknown", async () => {
    const s = await make();
    const implicit = await s.set(T, B, NOW);
    const a = await s.set(T, A, NOW + 1, { explicit: true });
    expect(await s.resolve(T, implicit.id, NOW + 2)).toEqual({ kind: "turn_unknown" });
    expect(await s.end(implicit.id, NOW + 2)).toBe(false);
    const b = await s.set(T, B, NOW + 3, { explicit: true });
    expect(await s.resolve(T, undefined, NOW + 4)).toEqual({ kind: "turn_ambiguous", users: [A, B] });
    expect(await s.resolve(T, a.id, NOW + 4)).toEqual({ kind: "caller", userId: A });
    expect(await s.resolve(OTHER, a.id, NOW + 4)).toEqual({ kind: "turn_unknown" });
    expect(await s.end(a.id, NOW + 5)).toBe(true);
    expect(await s.end(a.id, NOW + 5)).toBe(false);
    expect(await s.resolve(T, undefined, NOW + 6)).toEqual({ kind: "caller", userId: B });
    expect(await s.end(b.id, NOW + 7)).toBe(true);
    expect(await s.resolve(T, undefined, NOW + 8)).toEqual({ kind: "no_turn" });
    expect(await s.end(`turn_${"A".repeat(24)}`, NOW + 8)).toBe(false);
  });

  it("an explicit turn never ended counts as ended after maxTurnMs, for resolve and for end", async () => {
    const s = await make({ maxTurnMs: 1_000 });
    const a = await s.set(T, A, NOW, { explicit: true });
    const b = await s.set(T, B, NOW + 500, { explicit: true });
    expect((await s.resolve(T, undefined, NOW + 999)).kind).toBe("turn_ambiguous");
    expect(await s.resolve(T, undefined, NOW + 1_000)).toEqual({ kind: "caller", userId: B });
    expect(await s.resolve(T, a.id, NOW + 1_000)).toEqual({ kind: "turn_unknown" });
    expect(await s.end(a.id, NOW + 1_000)).toBe(false);
    // Expired without any resolve in between: end refuses it all the same.
    expect(await s.end(b.id, NOW + 1_500)).toBe(false);
  });

  it("caps open turns and participants per thread", async () => {
    const s = await make({ maxOpenPerThread: 4, maxParticipantsPerThread: 8 });
    const ids: string[] = [];
    for (let i = 0; i < 6; i++)
      ids.push((await s.set(T, `U${String(i).padStart(8, "0")}`, NOW + i, { explicit: true })).id);
    expect(await s.resolve(T, ids[0], NOW + 10)).toEqual({ kind: "turn_unknown" });
    expect(await s.end(ids[1]!, NOW + 10)).toBe(false);
    expect((await s.resolve(T, ids[5], NOW + 10)).kind).toBe("caller");
    const r = await s.resolve(T, undefined, NOW + 10);
    expect(r.kind === "turn_ambiguous" ? r.users : []).toHaveLength(4);
    for (let i = 0; i < 20; i++) await s.set(T, `UX${String(i).padStart(6, "0")}`, NOW + 20 + i);
    const p = await s.participantsOf(T);
    expect(p.size).toBe(8);
    expect(p.has("UX000019")).toBe(true);
    expect(p.has("UX000011")).toBe(false);
  });
});

describe("turns shared by replicas (PostgreSQL)", () => {
  it("a turn reported to one replica is in force at the very next read on another, participants included; an end on either ends it for both", async () => {
    const { stores } = await pgReplicas(2);
    const [a, b] = [stores[0]!, stores[1]!];
    await a.set(T, B, NOW);
    expect(await b.resolve(T, undefined, NOW + 1)).toEqual({ kind: "caller", userId: B });
    const t = await a.set(T, A, NOW + 2, { explicit: true });
    expect(await b.resolve(T, undefined, NOW + 3)).toEqual({ kind: "caller", userId: A });
    expect([...(await b.participantsOf(T))]).toEqual([B, A]);
    expect(await b.end(t.id, NOW + 4)).toBe(true);
    expect(await a.resolve(T, t.id, NOW + 5)).toEqual({ kind: "turn_unknown" });
    expect(await a.end(t.id, NOW + 5)).toBe(false);
    // A thread one replica serves is served on the other: Slack messages reaching it are turns.
    await a.markServed(OTHER, NOW);
    expect(await b.fromSlack(OTHER, A, "1700000100.000001", NOW)).toBeDefined();
    expect(await a.current(OTHER)).toBe(A);
  });

  it("concurrent reports from two replicas on one thread lose nothing (the row is locked while the rules run)", async () => {
    const { stores } = await pgReplicas(2, { maxParticipantsPerThread: 256 });
    const users = Array.from({ length: 40 }, (_, i) => `UC${String(i).padStart(6, "0")}`);
    const turns = await Promise.all(users.map((u, i) => stores[i % 2]!.set(T, u, NOW + i, { explicit: i % 4 === 0 })));
    expect((await stores[0]!.participantsOf(T)).size).toBe(40);
    // Every explicit turn is still open (16 at most by default; 10 were reported).
    for (const t of turns.filter((x) => x.explicit))
      expect(await stores[1]!.resolve(T, t.id, NOW + 100)).toEqual({ kind: "caller", userId: t.userId });
  });

  it("the reaper forgets threads idle past the turn max age (their turn ids with them) and caps the thread count", async () => {
    const { stores, pg } = await pgReplicas(1, { maxTurnMs: 10_000, maxThreads: 5 });
    const s = stores[0]!;
    const old = await s.set(T, A, NOW, { explicit: true });
    for (let i = 0; i < 7; i++) await s.set({ ...T, threadTs: `1700000001.00000${i}` }, B, NOW + 12_000 + i);
    // A call in an otherwise quiet thread keeps it served (its seen time is refreshed).
    await s.markServed(OTHER, NOW);
    expect(await s.resolve(OTHER, undefined, NOW + 19_000)).toEqual({ kind: "no_turn" });
    // T idle past 10 s goes; of the 8 left, the 3 least recently seen go to keep 5.
    expect(await s.reap(NOW + 20_100)).toBe(4);
    expect(await s.size()).toBe(5);
    expect(await s.isServed(T)).toBe(false);
    expect(await s.end(old.id, NOW + 20_100)).toBe(false);
    expect(await s.isServed(OTHER)).toBe(true);
    expect(await s.isServed({ ...T, threadTs: "1700000001.000002" })).toBe(false);
    expect(await s.isServed({ ...T, threadTs: "1700000001.000003" })).toBe(true);
    // One implicit turn id per remaining thread with a turn; the reaped threads' ids went with them.
    expect((await pg.db.query("SELECT count(*)::int AS n FROM turn_ids")).rows[0]).toEqual({ n: 4 });
  });

  it("a stored state that does not parse fails the call instead of being guessed at", async () => {
    const { stores, pg } = await pgReplicas(1);
    await stores[0]!.set(T, A, NOW);
    await pg.db.query(`UPDATE turn_threads SET state = jsonb_set(state, '{participants}', '"everyone"')`);
    await expect(stores[0]!.resolve(T, undefined, NOW + 1)).rejects.toThrow(/turn state of thread .* is not valid/);
    await expect(stores[0]!.participantsOf(T)).rejects.toThrow(/not valid/);
  });

  it("measures: resolve on PostgreSQL is one primary-key read (printed against memory)", async () => {
    const { stores } = await pgReplicas(1);
    const mem = new MemoryTurnStore();
    for (const s of [stores[0]!, mem])
      for (let i = 0; i < 50; i++)
        await s.set({ ...T, threadTs: `1700000002.0000${String(i).padStart(2, "0")}` }, A, NOW + i);
    const time = async (s: TurnStore): Promise<{ p50: number; p99: number }> => {
      const ms: number[] = [];
      for (let i = 0; i < 400; i++) {
        const t0 = performance.now();
        const r = await s.resolve(
          { ...T, threadTs: `1700000002.0000${String(i % 50).padStart(2, "0")}` },
          undefined,
          NOW + 1_000,
        );
        ms.push(performance.now() - t0);
        expect(r).toEqual({ kind: "caller", userId: A });
      }
      ms.sort((x, y) => x - y);
      return { p50: ms[Math.floor(ms.length / 2)]!, p99: ms[Math.floor(ms.length * 0.99)]! };
    };
    const pgT = await time(stores[0]!);
    const memT = await time(mem);
    // A host report (the write side) for comparison: one locked transaction.
    const sets: number[] = [];
    for (let i = 0; i < 100; i++) {
      const t0 = performance.now();
      await stores[0]!.set({ ...T, threadTs: `1700000002.0000${String(i % 50).padStart(2, "0")}` }, B, NOW + 2_000 + i);
      sets.push(performance.now() - t0);
    }
    sets.sort((x, y) => x - y);
    console.log(
      `turn resolve, 400 calls over 50 threads: PostgreSQL p50 ${pgT.p50.toFixed(3)} ms p99 ${pgT.p99.toFixed(3)} ms; memory p50 ${memT.p50.toFixed(4)} ms p99 ${memT.p99.toFixed(4)} ms; ` +
        `PostgreSQL turn report (set) p50 ${sets[50]!.toFixed(3)} ms`,
    );
    expect(await stores[0]!.resolve(T, undefined, NOW)).toEqual({ kind: "no_turn" });
  });
});
