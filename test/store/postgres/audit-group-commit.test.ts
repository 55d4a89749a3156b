import { describe, expect, it } from "vitest";
import type { AuditEvent } from "../../../src/audit/event.js";
import { AUDIT_BATCH_MAX_ROWS } from "../../../src/store/audit-batch.js";
import type { PostgresStore } from "../../../src/store/postgres/pg-store.js";
import { postgresStores } from "../../support/postgres-stores.js";

// Group commit of audit rows on PostgreSQL (issue 25, item 2): each commit is one INSERT sent on
// its own (one round trip, no BEGIN/COMMIT); appends made in one turn of the event loop, or while
// a commit is in flight, share the next INSERT; each caller's promise settles only once its own
// row is committed. A real PostgreSQL server, started by the test.

const pg = postgresStores();

const row = (callId: string): AuditEvent => ({ at: 1, event: "call_started", callId, service: "svc", tool: "t" });
const counts = (s: PostgresStore) => ({ ...s.db.counts });
const committed = async (s: PostgresStore, callId: string) =>
  (await s.db.query<{ n: number }>("SELECT count(*)::int AS n FROM audit WHERE call_id = $1", [callId])).rows[0]!.n;
const ids = (n: number, p: string) => Array.from({ length: n }, (_, i) => `${p}${String(i).padStart(4, "0")}`);

describe("PostgreSQL audit group commit", () => {
  it("commits a lone append with one statement and no BEGIN/COMMIT, before its promise resolves", async () => {
    const s = await pg.store(await pg.schema());
    const before = counts(s);
    await s.audit.append([row("call_lone")]);
    const after = counts(s);
    expect(after.statements - before.statements).toBe(1);
    expect(after.transactions - before.transactions).toBe(1);
    expect(await committed(s, "call_lone")).toBe(1);
  });

  it("shares one INSERT among concurrent appends, each settled only once its row is committed", async () => {
    const s = await pg.store(await pg.schema());
    const before = counts(s);
    const calls = ids(20, "call_c");
    const seen = await Promise.all(calls.map((id) => s.audit.append([row(id)]).then(() => committed(s, id))));
    // One INSERT, then the 20 reads of this test.
    expect(counts(s).statements - before.statements).toBe(1 + calls.length);
    expect(seen).toEqual(calls.map(() => 1));
    const order = await s.audit.query({ event: "call_started" });
    expect(order.map((r) => r.callId)).toEqual(calls);
  });

  it("keeps one INSERT in flight: the appends made meanwhile share the next one", async () => {
    const s = await pg.store(await pg.schema());
    const before = counts(s);
    const first = s.audit.append([row("call_first")]);
    // The end of this turn sends the first INSERT; the appends below are made while it is in flight.
    await new Promise((r) => setImmediate(r));
    const later = ids(10, "call_l").map((id) => s.audit.append([row(id)]));
    await Promise.all([first, ...later]);
    expect(counts(s).statements - before.statements).toBe(2);
    expect(await s.audit.count({ event: "call_started" })).toBe(11);
  });

  it(`takes at most ${AUDIT_BATCH_MAX_ROWS} rows per INSERT; the rest go in the next`, async () => {
    const s = await pg.store(await pg.schema());
    const before = counts(s);
    const calls = ids(AUDIT_BATCH_MAX_ROWS + 88, "call_b");
    await Promise.all(calls.map((id) => s.audit.append([row(id)])));
    expect(counts(s).statements - before.statements).toBe(2);
    expect(await s.audit.count({ event: "call_started" })).toBe(calls.length);
  });

  it("keeps every value as written: quotes, braces, commas, backslashes, non-ASCII, nulls and large numbers", async () => {
    const s = await pg.store(await pg.schema());
    const odd = "a\"b\\c{d},e'f NULL ü 🦀";
    const full: AuditEvent = {
      at: 1_800_000_000_123,
      event: "call",
      teamId: odd,
      tool: "",
      argsHash: "NULL",
      durationMs: 2 ** 40,
      resultBytes: 0,
      errorCode: null,
      callId: "call_odd",
    };
    await Promise.all([s.audit.append([full]), s.audit.append([row("call_plain")])]);
    const [got] = await s.audit.query({ callId: "call_odd" });
    expect(got).toMatchObject({ ...full, channelId: null, ownerUserId: null, actor: null });
  });

  it("fails only the append whose row is refused; the others of its INSERT are committed", async () => {
    const s = await pg.store(await pg.schema());
    const broken = { at: 1, event: null } as unknown as AuditEvent;
    const results = await Promise.allSettled([
      s.audit.append([row("call_a")]),
      s.audit.append([broken]),
      s.audit.append([row("call_b")]),
    ]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((await committed(s, "call_a")) + (await committed(s, "call_b"))).toBe(2);
  });
});
