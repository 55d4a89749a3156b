// What the SQLite and PostgreSQL adapters' statements differ in, and nothing else: the shared
// statements of src/store/sql/ are written once with `?` placeholders and these few words.

/** A statement and its positional values, ready for one adapter's driver. */
export interface Stmt {
  readonly text: string;
  readonly values: readonly unknown[];
}

/** The dialect of one adapter. */
export interface SqlDialect {
  readonly name: "sqlite" | "postgres";
  /** `text` with its `?` placeholders as the driver takes them. */
  placeholders(text: string): string;
  /** A subquery over the strings of one list parameter (`?`), and that parameter's value. */
  readonly list: { readonly sql: string; value(items: readonly string[]): unknown };
  /** An id column compared and ordered bytewise, as SQLite does whatever PostgreSQL's collation. */
  bytewise(column: string): string;
  /** The row locks of a read that updates what it read: none in SQLite, whose writer is alone. */
  readonly forUpdate: string;
  /** As `forUpdate`, for a job that two replicas may run at once: each takes rows the other did not. */
  readonly forUpdateSkipLocked: string;
  /** The column that orders a table's rows as they were inserted: SQLite's rowid, PostgreSQL's `seq`. */
  readonly insertOrder: string;
  /** The LIMIT of an OFFSET without one: SQLite needs a LIMIT, and takes -1 for none. */
  readonly noLimit: string;
}

export const SQLITE: SqlDialect = {
  name: "sqlite",
  placeholders: (text) => text,
  list: { sql: "SELECT value FROM json_each(?)", value: (items) => JSON.stringify(items) },
  bytewise: (column) => column,
  forUpdate: "",
  forUpdateSkipLocked: "",
  insertOrder: "rowid",
  noLimit: "LIMIT -1",
};

export const POSTGRES: SqlDialect = {
  name: "postgres",
  placeholders: (text) => {
    let n = 0;
    // The shared statements hold no `?` but their placeholders (no literals, no jsonb operators).
    return text.replace(/\?/g, () => `$${++n}`);
  },
  list: { sql: "SELECT unnest(CAST(? AS text[]))", value: (items) => [...items] },
  bytewise: (column) => `${column} COLLATE "C"`,
  forUpdate: " FOR UPDATE",
  forUpdateSkipLocked: " FOR UPDATE SKIP LOCKED",
  insertOrder: "seq",
  noLimit: "LIMIT ALL",
};

/** The marks around a value's index while a statement is built: control characters no SQL text holds. */
const OPEN = String.fromCharCode(1);
const CLOSE = String.fromCharCode(2);
const MARK = new RegExp(`${OPEN}(\\d+)${CLOSE}`, "g");

/**
 * Builds one statement: `p(v)` adds a value and returns a mark for it; the marks become `?` and
 * the values are put in the order their marks appear, however the text was assembled.
 */
export function stmt(build: (p: (value: unknown) => string) => string): Stmt {
  const given: unknown[] = [];
  const marked = build((value) => `${OPEN}${given.push(value) - 1}${CLOSE}`);
  const values: unknown[] = [];
  const text = marked.replace(MARK, (_, i: string) => {
    values.push(given[Number(i)]);
    return "?";
  });
  return { text, values };
}
