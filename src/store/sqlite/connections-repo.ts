import type { AuditEvent } from "../../audit/event.js";
import type { SealedSecret } from "../../vault/aead.js";
import type { Connection, NewConnection } from "../records.js";
import { type ConnectionRow, toConnection } from "../rows.js";
import { ownRowStatement } from "../sql/candidates.js";
import * as ops from "../sql/connections.js";
import { SQLITE } from "../sql/dialect.js";
import type { Program } from "../sql/program.js";
import type {
  CandidateQuery,
  CandidateRow,
  ConnectionFilter,
  ConnectionRepo,
  EndConnection,
  OwnConnectionQuery,
} from "../store.js";
import { queryCandidates } from "./candidates-query.js";
import { ConnectionMemo } from "./connection-memo.js";
import { type Db, DEFAULT_LOCK_WAIT, type LockWait, writeTx } from "./db.js";
import { SqliteRunner } from "./sqlite-program.js";

// The connections repository on SQLite: the shared statements and writes of src/store/sql/, run
// synchronously in this process's write transactions, with the warm path's memo in front.

/** SQLite connections repository. */
export class SqliteConnectionRepo implements ConnectionRepo {
  private readonly runner: SqliteRunner;
  /** Rows and own-connection answers of the warm path; cleared by every write below (see connection-memo.ts). */
  readonly memo: ConnectionMemo;

  constructor(
    private readonly db: Db,
    private readonly wait: LockWait = DEFAULT_LOCK_WAIT,
  ) {
    this.runner = new SqliteRunner(db);
    this.memo = new ConnectionMemo(db);
  }

  /** A write transaction on connection rows: the memo is cleared inside it, so no stale row survives it. */
  private write<T>(p: Program<T>): Promise<T> {
    const run = (): T => {
      this.memo.clear();
      return this.runner.run(p);
    };
    return writeTx(this.db, run, this.wait);
  }

  async create(
    c: NewConnection,
    audit: readonly AuditEvent[],
  ): Promise<{ connection: Connection; replaced: Connection | null }> {
    return this.write(ops.createConnection(c, audit));
  }

  async get(id: string): Promise<Connection | undefined> {
    const known = this.memo.row(id);
    if (known) return known;
    const c = this.runner.run(ops.connectionRow(id));
    if (c) this.memo.keep(c);
    return c;
  }

  async ownConnection(q: OwnConnectionQuery): Promise<Connection | undefined> {
    const key = [q.thread.teamId, q.caller, q.service, q.thread.channelId, q.thread.threadTs].join("\u0000");
    const known = this.memo.own(key);
    if (known === null) return undefined;
    const hit = known === undefined ? undefined : await this.get(known);
    // A remembered row past its expiry (not reaped yet) is looked up again: another own row may serve.
    if (hit && hit.status === "active" && hit.expiresAt > q.now) return hit;
    const own = ownRowStatement(q, SQLITE);
    const r = this.runner.prepare(own.text).get(...own.values) as ConnectionRow | undefined;
    const c = r ? toConnection(r) : undefined;
    this.memo.keepOwn(key, c?.id ?? null);
    if (c) this.memo.keep(c);
    return c;
  }

  async list(f: ConnectionFilter): Promise<Connection[]> {
    return this.runner.run(ops.listConnections(f));
  }

  async candidates(q: CandidateQuery): Promise<CandidateRow[]> {
    return queryCandidates((text) => this.runner.prepare(text), q);
  }

  async end(id: string, how: EndConnection): Promise<Connection | undefined> {
    return this.write(ops.endConnection(id, how));
  }

  async expireDue(now: number): Promise<Connection[]> {
    return this.write(ops.expireDueConnections(now, SQLITE));
  }

  async markNeedsLogin(id: string, at: number, audit: readonly AuditEvent[]): Promise<boolean> {
    return this.write(ops.markNeedsLogin(id, at, audit));
  }

  async updateSecret(id: string, sealed: SealedSecret, at: number, audit: readonly AuditEvent[]): Promise<boolean> {
    return this.write(ops.updateSecret(id, sealed, at, audit));
  }

  async reencryptAll(reseal: ops.Reseal, audit: AuditEvent): Promise<number> {
    return this.write(ops.reencryptAllConnections(reseal, audit, SQLITE));
  }

  /** Re-seals every row holding a ciphertext; must run inside a write transaction (Store.reencryptAll shares it). */
  reencryptInTx(reseal: ops.Reseal): number {
    this.memo.clear();
    return this.runner.run(ops.reencryptConnections(reseal, SQLITE));
  }
}
