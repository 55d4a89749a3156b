import type { AuditEvent } from "../../audit/event.js";
import type { RowProof } from "../../domain/row-proof.js";
import type { SealedSecret } from "../../vault/aead.js";
import type { Connection, NewConnection } from "../records.js";
import { type ConnectionRow, toConnection } from "../rows.js";
import { ownRowStatement } from "../sql/candidates.js";
import * as ops from "../sql/connections.js";
import { POSTGRES } from "../sql/dialect.js";
import type { Program } from "../sql/program.js";
import type {
  CandidateQuery,
  CandidateRow,
  ConnectionFilter,
  ConnectionRepo,
  EndConnection,
  OwnConnectionQuery,
} from "../store.js";
import { queryPgCandidates } from "./candidates-query.js";
import type { PgDb, Sql } from "./pg-db.js";
import { runPg } from "./pg-program.js";
import { versionSql } from "./row-proof.js";

// The connections repository on PostgreSQL: the shared statements and writes of src/store/sql/,
// awaited in one transaction each, safe across replicas (row locks, advisory locks on create).

/** PostgreSQL connections repository; same contract as the SQLite one, safe across replicas. */
export class PgConnectionRepo implements ConnectionRepo {
  constructor(private readonly db: PgDb) {}

  private write<T>(p: Program<T>): Promise<T> {
    return this.db.tx((q) => runPg(q, this.db.lockKeys, p));
  }

  async create(
    c: NewConnection,
    audit: readonly AuditEvent[],
  ): Promise<{ connection: Connection; replaced: Connection | null }> {
    return this.write(ops.createConnection(c, audit));
  }

  async get(id: string): Promise<Connection | undefined> {
    return runPg(this.db, this.db.lockKeys, ops.connectionRow(id));
  }

  async list(f: ConnectionFilter): Promise<Connection[]> {
    return runPg(this.db, this.db.lockKeys, ops.listConnections(f));
  }

  /** No memo here: another replica's revoke must win on the next call, and only the database knows it. */
  async ownConnection(q: OwnConnectionQuery): Promise<Connection | undefined> {
    const own = ownRowStatement(q, POSTGRES);
    const [r] = (await this.db.query<ConnectionRow>(POSTGRES.placeholders(own.text), own.values)).rows;
    return r ? toConnection(r) : undefined;
  }

  /**
   * The own row and, in the same statement's snapshot, the version of every row of that owner for
   * that service (row-proof.ts): what a later call decided from this read proves unchanged.
   */
  async ownConnectionProved(q: OwnConnectionQuery): Promise<{ conn: Connection | undefined; proof: RowProof }> {
    const key = { kind: "own", teamId: q.thread.teamId, ownerUserId: q.caller, service: q.service } as const;
    const own = ownRowStatement(q, POSTGRES);
    const v = versionSql({ ...key, version: null }, own.values.length + 1);
    // The row (if any) and the set's version in one statement: a LEFT JOIN keeps the version when no row is usable.
    const sql = `SELECT own.*, proof.v AS proof_version FROM (SELECT ${v.sql} AS v) proof
      LEFT JOIN LATERAL (${POSTGRES.placeholders(own.text)}) own ON true`;
    const [r] = (
      await this.db.query<ConnectionRow & { proof_version: string | null }>(sql, [...own.values, ...v.params])
    ).rows;
    if (!r) throw new Error("the own row's proved read returned no row");
    const { proof_version: version, ...row } = r;
    return { conn: row.id !== null ? toConnection(row) : undefined, proof: { ...key, version } };
  }

  async candidates(q: CandidateQuery): Promise<CandidateRow[]> {
    return queryPgCandidates(this.db, q);
  }

  async end(id: string, how: EndConnection): Promise<Connection | undefined> {
    return this.write(ops.endConnection(id, how));
  }

  async expireDue(now: number): Promise<Connection[]> {
    return this.write(ops.expireDueConnections(now, POSTGRES));
  }

  async markNeedsLogin(id: string, at: number, audit: readonly AuditEvent[]): Promise<boolean> {
    return this.write(ops.markNeedsLogin(id, at, audit));
  }

  async updateSecret(id: string, sealed: SealedSecret, at: number, audit: readonly AuditEvent[]): Promise<boolean> {
    return this.write(ops.updateSecret(id, sealed, at, audit));
  }

  async reencryptAll(reseal: ops.Reseal, audit: AuditEvent): Promise<number> {
    return this.write(ops.reencryptAllConnections(reseal, audit, POSTGRES));
  }
}

/** Re-seals every connection holding a ciphertext with `q`, an open transaction's client (Store.reencryptAll's). */
export function reencryptConnections(q: Sql, reseal: ops.Reseal): Promise<number> {
  return runPg(q, null, ops.reencryptConnections(reseal, POSTGRES));
}
