import { describe, expect, it } from "vitest";
import type { AuditEvent } from "../../../src/audit/event.js";
import { newCallId } from "../../../src/domain/ids.js";
import type { PostgresStore } from "../../../src/store/postgres/pg-store.js";
import { type RowProof, versionSql } from "../../../src/store/postgres/row-proof.js";
import { PostgresTopology } from "../../../src/topology/postgres/postgres-topology.js";
import { PgTurnStore } from "../../../src/topology/postgres/turns-repo.js";
import { postgresStores } from "../../support/postgres-stores.js";

// Row proofs on a real PostgreSQL: the statement that takes a call's rate and commits its
// call_started row does both only if every row the call was decided from still has the version it
// was read with. Each kind of row, changed, deleted, ended or newly there, fails its proof, and an
// unproved take writes no row and takes no token.

const pg = postgresStores();
const rate = { burst: 5, perMs: 5 / 60_000 };
const NOW = 1_700_000_000_000;

const started = (): AuditEvent => ({
  at: NOW,
  event: "call_started",
  callId: newCallId(NOW),
  teamId: "T1",
  callerUserId: "U1",
  service: "svc",
  tool: "read",
});

/** A schema with a live session, a thread's turns, two connections of U1 for svc and a pin. */
async function fixture(): Promise<{ store: PostgresStore; topology: PostgresTopology }> {
  const store = await pg.store(await pg.schema());
  const q = (sql: string, params: unknown[] = []) => store.db.query(sql, params);
  await q(
    `INSERT INTO mcp_sessions (id, team_id, token_digest, thread_header, protocol_version, initialize, created_at, last_seen_at)
     VALUES ('s1', 'T1', 'd', 'T1/C1/1.1', '2025-11-25', $2, $1, $1)`,
    [
      NOW,
      JSON.stringify({ protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "host", version: "1" } }),
    ],
  );
  await new PgTurnStore(store.db).set({ teamId: "T1", channelId: "C1", threadTs: "1.1" }, "U1", NOW);
  for (const [id, scope, channel, ts] of [
    ["conn_a", "user", null, null],
    ["conn_b", "thread", "C1", "1.1"],
  ] as const)
    await q(
      `INSERT INTO connections (id, team_id, owner_user_id, service, scope, channel_id, thread_ts, status, created_by, created_at, updated_at, expires_at)
       VALUES ($1, 'T1', 'U1', 'svc', $2, $3, $4, 'needs_login', 'U1', $5, $5, $6)`,
      [id, scope, channel, ts, NOW, NOW + 86_400_000],
    );
  await q(
    `INSERT INTO tool_pins (team_id, service, tool, status, pinned_hash, pinned_definition, first_seen_at, changed_at)
     VALUES ('T1', 'svc', 'read', 'pinned', 'h1', '{}', $1, $1)`,
    [NOW],
  );
  return { store, topology: new PostgresTopology(store.db) };
}

const KEYS = {
  session: { kind: "session", id: "s1" },
  turn: { kind: "turn", threadKey: "T1/C1/1.1" },
  own: { kind: "own", teamId: "T1", ownerUserId: "U1", service: "svc" },
  pin: { kind: "pin", teamId: "T1", service: "svc", tool: "read" },
} as const;

/** The proofs of the four rows as they stand now (each read as a later call's read would). */
async function proofsNow(store: PostgresStore): Promise<RowProof[]> {
  const out: RowProof[] = [];
  for (const key of Object.values(KEYS)) {
    const v = versionSql({ ...key, version: null } as RowProof);
    const version = (await store.db.query<{ v: string | null }>(`SELECT ${v.sql} AS v`, [...v.params])).rows[0]!.v;
    out.push({ ...key, version } as RowProof);
  }
  return out;
}

const auditRows = async (store: PostgresStore): Promise<number> => store.audit.count({ event: "call_started" });
const tokens = async (store: PostgresStore): Promise<number | undefined> =>
  (await store.db.query<{ tokens: number }>("SELECT tokens FROM rate_buckets WHERE key = 'u:T1:U1'")).rows[0]?.tokens;

describe("row proofs in the call_started statement", () => {
  it("unchanged rows: the take is granted and the row written, as without proofs; every read gives a version", async () => {
    const { store, topology } = await fixture();
    const proofs = await proofsNow(store);
    for (const p of proofs) expect(p.version).toMatch(p.kind === "own" ? /^conn_a:[0-9]+,conn_b:[0-9]+$/ : /^[0-9]+$/);
    const r = await topology.rateBuckets.takeAndAppend!([{ key: "u:T1:U1", rate }], NOW, [started()], proofs);
    expect(r).toEqual({ granted: true });
    expect(await auditRows(store)).toBe(1);
    expect(await tokens(store)).toBe(4);
    // The versions did not move: a second call proved from the same reads is granted too.
    expect(await topology.rateBuckets.takeAndAppend!([{ key: "u:T1:U1", rate }], NOW, [started()], proofs)).toEqual({
      granted: true,
    });
    expect(await auditRows(store)).toBe(2);
  });

  const changes: readonly [string, string][] = [
    [
      "the turn passed to another user",
      "UPDATE turn_threads SET state = jsonb_set(state, '{current,userId}', '\"U2\"')",
    ],
    ["the thread's turns written again unchanged (a new row version)", "UPDATE turn_threads SET seen_at = seen_at"],
    ["the session ended", "UPDATE mcp_sessions SET ended_at = last_seen_at"],
    ["the session record deleted", "DELETE FROM mcp_sessions"],
    ["the session's last use written", "UPDATE mcp_sessions SET last_seen_at = last_seen_at + 1"],
    ["one of the owner's connections revoked", "UPDATE connections SET status = 'revoked' WHERE id = 'conn_b'"],
    [
      "a new connection of the owner for the service",
      `INSERT INTO connections (id, team_id, owner_user_id, service, scope, status, created_by, created_at, updated_at, expires_at)
       SELECT 'conn_c', 'T1', 'U1', 'svc', 'user', 'revoked', 'U1', created_at, updated_at, expires_at FROM connections WHERE id = 'conn_a'`,
    ],
    [
      "the pin quarantined",
      "UPDATE tool_pins SET status = 'quarantined', pending_hash = 'h2', pending_definition = '{}', pinned_hash = pinned_hash",
    ],
    ["the pin deleted", "DELETE FROM tool_pins"],
  ];

  for (const [what, sql] of changes)
    it(`${what}: unproved, no row written, no token taken`, async () => {
      const { store, topology } = await fixture();
      const proofs = await proofsNow(store);
      // A first call takes a token and writes its row: the bucket exists, so "untouched" is observable.
      await topology.rateBuckets.takeAndAppend!([{ key: "u:T1:U1", rate }], NOW, [started()], proofs);
      await store.db.query(sql);
      const r = await topology.rateBuckets.takeAndAppend!([{ key: "u:T1:U1", rate }], NOW, [started()], proofs);
      expect(r).toEqual({ granted: false, unproved: true });
      expect(await auditRows(store)).toBe(1);
      expect(await tokens(store)).toBe(4);
      // Proved again from fresh reads, the same take goes through.
      const fresh = await proofsNow(store);
      expect(await topology.rateBuckets.takeAndAppend!([{ key: "u:T1:U1", rate }], NOW, [started()], fresh)).toEqual({
        granted: true,
      });
      expect(await auditRows(store)).toBe(2);
    });

  it("a missing row is proved missing: its appearance fails the proof", async () => {
    const { store, topology } = await fixture();
    await store.db.query("DELETE FROM tool_pins");
    const proofs = await proofsNow(store);
    expect(proofs.find((p) => p.kind === "pin")?.version).toBeNull();
    expect(await topology.rateBuckets.takeAndAppend!([{ key: "u:T1:U1", rate }], NOW, [started()], proofs)).toEqual({
      granted: true,
    });
    await store.db.query(
      `INSERT INTO tool_pins (team_id, service, tool, status, pending_hash, pending_definition, first_seen_at, changed_at)
       VALUES ('T1', 'svc', 'read', 'new', 'h9', '{}', 1, 1)`,
    );
    expect(await topology.rateBuckets.takeAndAppend!([{ key: "u:T1:U1", rate }], NOW, [started()], proofs)).toEqual({
      granted: false,
      unproved: true,
    });
    expect(await auditRows(store)).toBe(1);
  });

  it("a proved take still refuses by its rate (the proof gates, the rate decides), and keys are parameters, not SQL", async () => {
    const { store, topology } = await fixture();
    const proofs = await proofsNow(store);
    const one = { burst: 1, perMs: 1 / 60_000 };
    expect(
      await topology.rateBuckets.takeAndAppend!([{ key: "u:T1:U1", rate: one }], NOW, [started()], proofs),
    ).toEqual({ granted: true });
    expect(
      await topology.rateBuckets.takeAndAppend!([{ key: "u:T1:U1", rate: one }], NOW, [started()], proofs),
    ).toMatchObject({ granted: false, refused: 0 });
    // A key that would be SQL if pasted in is only ever a value: it names no row, so it proves "no row".
    const hostile: RowProof = { kind: "session", id: "s1' OR '1'='1", version: null };
    expect(await topology.rateBuckets.takeAndAppend!([{ key: "u:T1:U2", rate }], NOW, [started()], [hostile])).toEqual({
      granted: true,
    });
    const live: RowProof = { ...hostile, version: proofs[0]!.version };
    expect(await topology.rateBuckets.takeAndAppend!([{ key: "u:T1:U2", rate }], NOW, [started()], [live])).toEqual({
      granted: false,
      unproved: true,
    });
    expect(await auditRows(store)).toBe(2);
  });
});

describe("the proved reads (what a warm call's memo is filled from)", () => {
  const thread = { teamId: "T1", channelId: "C1", threadTs: "1.1" };

  /** The four proved reads, as the first call of a session makes them. */
  async function provedReads(store: PostgresStore, topology: PostgresTopology) {
    const session = await topology.mcpSessions.getProved("s1");
    const turn = await new PgTurnStore(store.db).resolveProved(thread, undefined, NOW);
    const own = await store.connections.ownConnectionProved({ thread, caller: "U1", service: "svc", now: NOW });
    const pin = await store.toolPins.getProved("T1", "svc", "read");
    return { session, turn, own, pin, proofs: [session.proof, turn.proof, own.proof, pin.proof] };
  }

  it("read the rows with the versions a proof checks, in the same snapshot", async () => {
    const { store, topology } = await fixture();
    await store.db.query("UPDATE connections SET status = 'active' WHERE id = 'conn_b'");
    const r = await provedReads(store, topology);
    expect(r.session.record?.id).toBe("s1");
    expect(r.turn.resolution).toEqual({ kind: "caller", userId: "U1" });
    expect(r.turn.state?.current?.userId).toBe("U1");
    expect(r.own.conn?.id).toBe("conn_b");
    expect(r.pin.pin?.status).toBe("pinned");
    expect(r.proofs).toEqual(await proofsNow(store));
    expect(await topology.rateBuckets.takeAndAppend!([{ key: "u:T1:U1", rate }], NOW, [started()], r.proofs)).toEqual({
      granted: true,
    });
  });

  it("no row is read as no row, with the version a proof of absence carries", async () => {
    const { store, topology } = await fixture();
    for (const table of ["tool_pins", "mcp_sessions", "turn_threads"]) await store.db.query(`DELETE FROM ${table}`);
    const r = await provedReads(store, topology);
    expect(r.session.record).toBeUndefined();
    expect(r.session.proof.version).toBeNull();
    expect(r.pin.pin).toBeUndefined();
    expect(r.pin.proof.version).toBeNull();
    // No usable own row (both are needs_login), but the owner's rows have a version all the same.
    expect(r.own.conn).toBeUndefined();
    expect(r.own.proof.version).toMatch(/^conn_a:[0-9]+,conn_b:[0-9]+$/);
    // A thread with no row is marked served by the read itself: the version it read is gone at once.
    expect(r.turn.state).toBeUndefined();
    expect(await topology.rateBuckets.takeAndAppend!([{ key: "u:T1:U1", rate }], NOW, [started()], r.proofs)).toEqual({
      granted: false,
      unproved: true,
    });
  });

  it("an ended session reads as its record with a proof of no live session", async () => {
    const { store, topology } = await fixture();
    await store.db.query("UPDATE mcp_sessions SET ended_at = $1", [NOW]);
    const r = await topology.mcpSessions.getProved("s1");
    expect(r.record?.endedAt).toBe(NOW);
    expect(r.proof.version).toBeNull();
  });
});
