import { describe, expect, it } from "vitest";
import { teamScans } from "../../../src/store/sqlite/candidates-query.js";
import type { SqliteStore } from "../../../src/store/sqlite/sqlite-store.js";
import type { CandidateQuery } from "../../../src/store/store.js";
import { backends, type StoreHarness } from "./backends.js";

// The candidates query (issue 13 item 2): the rows one caller can use in one thread, found by
// indexed lookups only, never a ciphertext column, paged by id. Real SQLite file and real
// PostgreSQL (the same statement, translated), real vault.

const BACKENDS = backends();

const THREAD = { teamId: "T1", channelId: "C1", threadTs: "1700000000.000100" };
const OTHER_THREAD = { ...THREAD, threadTs: "1700000000.000200" };

async function seed(h: StoreHarness) {
  const make = (
    owner: string | null,
    scope: "thread" | "user" | "shared",
    o: { thread?: typeof THREAD; team?: string; service?: string } = {},
  ) => {
    const t = o.thread ?? THREAD;
    return h.lifecycle.create({
      teamId: o.team ?? "T1",
      ownerUserId: owner,
      service: o.service ?? "svc",
      scope,
      channelId: scope === "thread" ? t.channelId : null,
      threadTs: scope === "thread" ? t.threadTs : null,
      credential: { kind: "fields", fields: { token: `tok-${owner}-${scope}` } },
      createdBy: owner ?? "cli:test",
    });
  };
  const ids = {
    ownThread: (await make("UALICE", "thread")).id,
    ownUser: (await make("UALICE", "user")).id,
    ownOtherThread: (await make("UALICE", "thread", { thread: OTHER_THREAD })).id,
    bobUser: (await make("UBOB", "user")).id,
    carolUser: (await make("UCAROL", "user")).id,
    daveHere: (await make("UDAVE", "thread")).id,
    eveElsewhere: (await make("UEVE", "thread", { thread: OTHER_THREAD })).id,
    shared: (await make(null, "shared")).id,
    otherTeam: (await make("UBOB", "user", { team: "T2" })).id,
    otherService: (await make("UALICE", "thread", { service: "other" })).id,
  };
  await h.store.grants.create(
    {
      id: "grant1",
      connectionId: ids.bobUser,
      ...THREAD,
      ownerUserId: "UBOB",
      borrowerUserId: "UALICE",
      service: "svc",
      createdAt: h.clock.now(),
    },
    [],
  );
  // Thousands of other members' rows in the same team: none may be read for this caller.
  // One multi-row INSERT (both dialects take it), in batches under SQLite's parameter limit.
  for (let start = 0; start < 3_000; start += 1_000) {
    const values: unknown[] = [];
    const tuples: string[] = [];
    for (let i = start; i < start + 1_000; i++) {
      values.push(`conn_noise_${String(i).padStart(5, "0")}`, `UNOISE${i}`, h.clock.now() + 3_600_000);
      tuples.push("(?, 'T1', ?, 'svc', 'user', 'active', 'x', 0, 0, ?)");
    }
    await h.exec(
      `INSERT INTO connections (id, team_id, owner_user_id, service, scope, status, created_by, created_at, updated_at, expires_at) VALUES ${tuples.join(", ")}`,
      ...values,
    );
  }
  return ids;
}

/** The same query for every service (connections_list). */
const anyService = ({ service: _service, ...q }: CandidateQuery): CandidateQuery => q;

const query = (h: StoreHarness, o: Partial<CandidateQuery> = {}): CandidateQuery => ({
  thread: THREAD,
  caller: "UALICE",
  participants: ["UALICE", "UBOB"],
  service: "svc",
  own: "here",
  now: h.clock.now(),
  limit: 1_000,
  ...o,
});

describe.each(BACKENDS)("candidates query on $name", (be) => {
  it("returns exactly the rows this caller can use here, with grant standing and no ciphertext", async () => {
    const h = await be.harness();
    const ids = await seed(h);
    const got = await h.store.connections.candidates(query(h));
    expect(got.map((r) => r.connection.id).sort()).toEqual(
      [ids.ownThread, ids.ownUser, ids.bobUser, ids.daveHere, ids.shared].sort(),
    );
    expect(got.find((r) => r.connection.id === ids.bobUser)!.granted).toBe(true);
    expect(got.find((r) => r.connection.id === ids.daveHere)!.granted).toBe(false);
    for (const r of got) expect(r.connection).not.toHaveProperty("sealed");

    // connections_list's shape: every live own row, every service, no other thread's others.
    const listed = await h.store.connections.candidates(anyService(query(h, { own: "everywhere" })));
    expect(listed.map((r) => r.connection.id).sort()).toEqual(
      [ids.ownThread, ids.ownUser, ids.ownOtherThread, ids.bobUser, ids.daveHere, ids.shared, ids.otherService].sort(),
    );
    expect(listed.find((r) => r.connection.id === ids.ownThread)!.grantsGiven).toBe(0);
  });

  it("leaves out ended and expired rows", async () => {
    const h = await be.harness();
    const ids = await seed(h);
    await h.lifecycle.revoke(ids.daveHere, "UDAVE", "test");
    h.clock.advance(3_600_001);
    expect(await h.store.connections.candidates(query(h))).toEqual([]);
  });

  it("pages by id: the pages together are the whole answer, in order", async () => {
    const h = await be.harness();
    await seed(h);
    const all = (await h.store.connections.candidates(query(h, { own: "everywhere" }))).map((r) => r.connection.id);
    const paged: string[] = [];
    for (let after: string | undefined; ; ) {
      const page = await h.store.connections.candidates(
        query(h, { own: "everywhere", limit: 2, ...(after ? { after } : {}) }),
      );
      paged.push(...page.map((r) => r.connection.id));
      after = page.at(-1)?.connection.id;
      if (page.length < 2) break;
    }
    expect(paged).toEqual(all);
    expect([...all].sort()).toEqual(all);
  });
});

describe("candidates query plan on sqlite", () => {
  it("every shape reads connections by index only, never by team alone", async () => {
    const h = await BACKENDS.find((b) => b.name === "sqlite")!.harness();
    const db = (h.store as SqliteStore).db;
    await seed(h);
    // With statistics, as a long-running database has them: the plan must still use the keyed indexes.
    db.exec("ANALYZE");
    for (const own of ["here", "everywhere"] as const)
      for (const service of ["svc", undefined])
        for (const after of [undefined, "conn_x"]) {
          const base = query(h, { own, ...(after ? { after } : {}) });
          const q = service ? base : anyService(base);
          expect(teamScans(db, q), `${own} ${service} ${after}`).toEqual([]);
        }
  });
});
