import { describe, expect, it } from "vitest";
import type { AuditRecord } from "../../../src/audit/event.js";
import type { CandidateQuery, OwnConnectionQuery, Store } from "../../../src/store/store.js";
import { backends, type StoreHarness } from "./backends.js";

// The rules of who may use which row (src/store/sql/candidates.ts) and the connection-end cascade
// (src/store/sql/connections.ts) are one text run by both adapters: on the same fixture rows,
// SQLite and PostgreSQL give the same answers, field by field, for every query shape.

const BACKENDS = backends();
const NOW = 1_700_000_000_000;
const LATER = NOW + 3_600_000;
const T1 = { teamId: "T1", channelId: "C1", threadTs: "1700000000.000100" };
const T2 = { teamId: "T1", channelId: "C1", threadTs: "1700000000.000200" };

type Row = [
  id: string,
  owner: string | null,
  service: string,
  scope: "thread" | "user" | "shared",
  thread: typeof T1 | null,
  status: string,
  createdAt: number,
  expiresAt: number,
];

/** Ids chosen so that id order, age order and insertion order all differ. */
const ROWS: Row[] = [
  ["conn_m_alice_user", "UALICE", "svc", "user", null, "active", NOW - 500, LATER],
  ["conn_z_alice_t1", "UALICE", "svc", "thread", T1, "active", NOW - 100, LATER],
  ["conn_a_alice_t2", "UALICE", "svc", "thread", T2, "active", NOW - 900, LATER],
  ["conn_b_bob_user", "UBOB", "svc", "user", null, "active", NOW - 50, LATER],
  ["conn_Y_bob_t1_other", "UBOB", "other", "thread", T1, "active", NOW - 70, LATER],
  ["conn_c_carol_t1", "UCAROL", "svc", "thread", T1, "active", NOW - 300, LATER],
  ["conn_d_dave_user_login", "UDAVE", "svc", "user", null, "needs_login", NOW - 20, LATER],
  ["conn_e_eve_user_expired", "UEVE", "svc", "user", null, "active", NOW - 10, NOW - 1],
  ["conn_f_frank_user", "UFRANK", "svc", "user", null, "active", NOW - 5, LATER],
  ["conn_s_shared", null, "svc", "shared", null, "active", NOW - 1_000, LATER],
  ["conn_S_shared_other", null, "other", "shared", null, "active", NOW - 1_000, LATER],
  ["conn_g_bob_team2", "UBOB", "svc", "user", null, "active", NOW - 40, LATER],
  ["conn_h_revoked", "UCAROL", "svc", "user", null, "revoked", NOW - 30, LATER],
];

async function seed(h: StoreHarness): Promise<void> {
  for (const [id, owner, service, scope, thread, status, createdAt, expiresAt] of ROWS) {
    const team = id === "conn_g_bob_team2" ? "T2" : "T1";
    await h.exec(
      `INSERT INTO connections (id, team_id, owner_user_id, service, scope, channel_id, thread_ts, status, created_by,
       created_at,
       updated_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'fixture', ?, ?, ?)`,
      id,
      team,
      owner,
      service,
      scope,
      thread?.channelId ?? null,
      thread?.threadTs ?? null,
      status,
      createdAt,
      createdAt,
      expiresAt,
    );
  }
  const grant = (id: string, conn: string, owner: string, borrower: string, thread: typeof T1, at: number) =>
    h.exec(
      `INSERT INTO grants (id, connection_id, team_id, channel_id, thread_ts, owner_user_id, borrower_user_id, service,
       created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, 'svc', ?)`,
      id,
      conn,
      thread.teamId,
      thread.channelId,
      thread.threadTs,
      owner,
      borrower,
      at,
    );
  await grant("grant_2", "conn_b_bob_user", "UBOB", "UALICE", T1, NOW - 8);
  await grant("grant_1", "conn_b_bob_user", "UBOB", "UCAROL", T1, NOW - 9);
  await grant("grant_3", "conn_c_carol_t1", "UCAROL", "UALICE", T2, NOW - 7);
  await grant("grant_4", "conn_m_alice_user", "UALICE", "UBOB", T1, NOW - 6);
  for (const [id, status] of [
    ["appr_pending", "pending"],
    ["appr_once", "allowed_once"],
    ["appr_denied", "denied"],
  ]) {
    await h.exec(
      `INSERT INTO approvals (id, nonce, connection_id, team_id, channel_id, thread_ts, owner_user_id, borrower_user_id,
       service, tool, args_hash, status, created_at, expires_at)
       VALUES (?, ?, 'conn_b_bob_user', ?, ?, ?, 'UBOB', 'UALICE', 'svc', 'read',
       'h', ?, ?, ?)`,
      id,
      `nonce_${id}`,
      T1.teamId,
      T1.channelId,
      T1.threadTs,
      status,
      NOW - 4,
      LATER,
    );
  }
}

/** Every query shape of the candidates statement, for a few callers and threads. */
function candidateQueries(): CandidateQuery[] {
  const out: CandidateQuery[] = [];
  for (const caller of ["UALICE", "UBOB", "UCAROL", "UNOBODY"])
    for (const thread of [T1, T2])
      for (const own of ["here", "everywhere"] as const)
        for (const service of ["svc", "other", undefined])
          for (const [after, limit] of [
            [undefined, 1_000],
            ["conn_c", 3],
            ["conn_Y", 1_000],
          ] as const) {
            const participants = ["UALICE", "UBOB", "UDAVE", "UEVE", caller];
            out.push({
              thread,
              caller,
              participants,
              own,
              now: NOW,
              limit,
              ...(service ? { service } : {}),
              ...(after ? { after } : {}),
            });
          }
  return out;
}

function ownQueries(): OwnConnectionQuery[] {
  const out: OwnConnectionQuery[] = [];
  for (const caller of ["UALICE", "UBOB", "UCAROL", "UDAVE", "UEVE"])
    for (const thread of [T1, T2, { ...T1, channelId: "C9" }])
      for (const service of ["svc", "other"])
        for (const now of [NOW, LATER + 1]) out.push({ thread, caller, service, now });
  return out;
}

async function answers(store: Store) {
  const candidates = [];
  for (const q of candidateQueries()) candidates.push({ q, rows: await store.connections.candidates(q) });
  const own = [];
  for (const q of ownQueries()) own.push({ q, id: (await store.connections.ownConnection(q))?.id ?? null });
  return { candidates, own };
}

/** The audit rows of the cascade, without the sequence numbers each database assigns. */
const cascadeAudit = (rows: AuditRecord[]) => rows.map(({ seq: _seq, ...r }) => r);

describe("SQLite and PostgreSQL agree on the same rows", () => {
  it("candidates and the own row: every query shape, field by field", async () => {
    const [sqlite, postgres] = await Promise.all(BACKENDS.map((b) => b.harness()));
    await seed(sqlite!);
    await seed(postgres!);
    const a = await answers(sqlite!.store);
    const b = await answers(postgres!.store);
    expect(b).toEqual(a);
    // The rules themselves, on this fixture: the thread-scoped own row first, else the user-scoped one.
    const own = (caller: string, thread: typeof T1) =>
      a.own.find((o) => o.q.caller === caller && o.q.thread === thread && o.q.service === "svc" && o.q.now === NOW)?.id;
    expect(own("UALICE", T1)).toBe("conn_z_alice_t1");
    expect(own("UALICE", T2)).toBe("conn_a_alice_t2");
    expect(own("UCAROL", T2)).toBeNull();
    expect(own("UDAVE", T1)).toBeNull();
    expect(own("UEVE", T1)).toBeNull();
    // Pages follow bytewise id order ("Y" before "a") in both.
    const page = a.candidates.find(
      (c) =>
        c.q.caller === "UBOB" &&
        c.q.thread === T1 &&
        c.q.own === "everywhere" &&
        c.q.service === undefined &&
        c.q.after === undefined,
    );
    const ids = page!.rows.map((r) => r.connection.id);
    expect(ids).toEqual([...ids].sort((x, y) => (Buffer.from(x) < Buffer.from(y) ? -1 : 1)));
    expect(ids.indexOf("conn_Y_bob_t1_other")).toBeLessThan(ids.indexOf("conn_b_bob_user"));
    expect(page!.rows.find((r) => r.connection.id === "conn_b_bob_user")!.grantsGiven).toBe(2);
  });

  it("the connection-end cascade: the same rows ended, grants revoked, approvals expired, audit rows", async () => {
    const [sqlite, postgres] = await Promise.all(BACKENDS.map((b) => b.harness()));
    const outcome = async (h: StoreHarness) => {
      await seed(h);
      const how = { status: "revoked" as const, reason: "test", at: NOW + 1, actor: "UBOB", audit: [] };
      const ended = await h.store.connections.end("conn_b_bob_user", how);
      const again = await h.store.connections.end("conn_b_bob_user", how);
      const expired = await h.store.connections.expireDue(NOW + 1);
      const approvals = await h.rows<{ id: string; status: string }>("SELECT id, status FROM approvals ORDER BY id");
      return {
        ended,
        again,
        approvals,
        expired: expired.map((c) => c.id),
        grants: await h.store.grants.list({ connectionId: "conn_b_bob_user" }),
        audit: cascadeAudit(await h.store.audit.query({})),
      };
    };
    const a = await outcome(sqlite!);
    expect(a.again).toBeUndefined();
    expect(a.ended?.status).toBe("revoked");
    expect(a.grants.every((g) => g.revokedAt === NOW + 1)).toBe(true);
    // The grants' audit rows come in the order the grants were made.
    expect(a.audit.filter((r) => r.event === "grant_revoked").map((r) => r.callerUserId)).toEqual(["UCAROL", "UALICE"]);
    expect(a.expired).toEqual(["conn_e_eve_user_expired"]);
    expect(a.approvals).toEqual([
      { id: "appr_denied", status: "denied" },
      { id: "appr_once", status: "expired" },
      { id: "appr_pending", status: "expired" },
    ]);
    expect(await outcome(postgres!)).toEqual(a);
  });
});
