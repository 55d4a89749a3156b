import type { Statement } from "better-sqlite3";
import { LRUCache } from "lru-cache";
import type { Connection } from "../records.js";
import type { Db } from "./db.js";

// Keeps SQLite off the warm path of mcp_call: the rows a call reads (its own-connection lookup and
// the chosen row by id) are remembered until anything could have changed them. A write through
// this process's repository clears the memo (create, end/revoke, expire, needs_login, rotate,
// re-encrypt); a write by any other connection to the file (the CLI revoking in another process)
// changes SQLite's `PRAGMA data_version`, which is read at most once per event-loop turn and
// clears the memo too. So a revoke still wins on the very next call, as when every call re-read.

/** Most rows and own-connection answers remembered; each is a few hundred bytes (sealed bytes included). */
export const CONNECTION_MEMO_MAX = 2_048;

/** Remembered rows by id and own-connection answers by (team, caller, service, thread). */
export class ConnectionMemo {
  private readonly rows = new LRUCache<string, Connection>({ max: CONNECTION_MEMO_MAX });
  /** The id of the caller's own row for a lookup key, or null: they have none usable there. */
  private readonly owns = new LRUCache<string, string | { none: true }>({ max: CONNECTION_MEMO_MAX });
  private readonly version: Statement<unknown[]>;
  private seenVersion: number;
  /** Set once data_version was read in this event-loop turn; cleared by setImmediate. */
  private checkedThisTurn = false;

  constructor(db: Db) {
    this.version = db.prepare("PRAGMA data_version").pluck();
    this.seenVersion = this.version.get() as number;
  }

  /** Forgets everything: called inside every local write of connection rows. */
  clear(): void {
    this.rows.clear();
    this.owns.clear();
  }

  /** A remembered row, or undefined (then read it and `keep` it). */
  row(id: string): Connection | undefined {
    this.revalidate();
    return this.rows.get(id);
  }

  /** Remembers a row read from the file. */
  keep(c: Connection): void {
    this.rows.set(c.id, c);
  }

  /** The remembered own-connection answer of `key`: an id, `null` (none), or undefined (not remembered). */
  own(key: string): string | null | undefined {
    this.revalidate();
    const v = this.owns.get(key);
    return v === undefined ? undefined : typeof v === "string" ? v : null;
  }

  /** Remembers an own-connection answer (`null`: the caller has none usable there). */
  keepOwn(key: string, id: string | null): void {
    this.owns.set(key, id ?? { none: true });
  }

  /** Rows and answers held now (tests, the bounds). */
  get size(): { rows: number; owns: number } {
    return { rows: this.rows.size, owns: this.owns.size };
  }

  /** Clears the memo when another connection committed to the file since the last look. */
  private revalidate(): void {
    if (this.checkedThisTurn) return;
    const v = this.version.get() as number;
    if (v !== this.seenVersion) {
      this.seenVersion = v;
      this.clear();
    }
    // Within one turn of the event loop no other process's commit can be ordered before this call anyway.
    this.checkedThisTurn = true;
    setImmediate(() => (this.checkedThisTurn = false));
  }
}
