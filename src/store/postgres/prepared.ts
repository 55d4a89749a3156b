import type pg from "pg";

// Named (prepared) statements: node-postgres parses a named statement once per connection and then
// sends only Bind/Execute, so the server skips parsing and planning on every later run of the same
// text. The store's SQL is a fixed set of texts, but the names are bounded anyway: past
// PREPARED_MAX distinct texts a statement is sent unnamed, as before (each connection keeps what it
// prepared for its lifetime, so the bound is also a bound on server memory per connection).

/** Most distinct statement texts given a name (the store has well under a hundred). */
export const PREPARED_MAX = 256;

/** SQLSTATE 0A000 with this message: a prepared `SELECT *` whose table gained a column (a newer replica migrated). */
const STALE_PLAN = /cached plan must not change result type/;

/** Whether `err` says a prepared statement's result shape is out of date (send it unnamed instead). */
export function isStalePlan(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  return e?.code === "0A000" && typeof e.message === "string" && STALE_PLAN.test(e.message);
}

/** Text → statement name, for the first PREPARED_MAX texts seen; texts whose plan went stale are never named again. */
export class PreparedNames {
  private readonly names = new Map<string, string>();
  private readonly unnamed = new Set<string>();
  private issued = 0;

  /** The query config for `text`: named while under the bound, plain otherwise. */
  config(text: string, values: readonly unknown[]): pg.QueryConfig {
    const name = this.nameOf(text);
    return name === undefined ? { text, values: values as unknown[] } : { name, text, values: values as unknown[] };
  }

  /** Sends `text` unnamed from now on (its prepared plan no longer matches the table). */
  retire(text: string): void {
    if (this.names.delete(text)) this.unnamed.add(text);
  }

  /** Named texts held (tests, the bound). */
  get size(): number {
    return this.names.size;
  }

  private nameOf(text: string): string | undefined {
    const known = this.names.get(text);
    if (known !== undefined) return known;
    // `issued` never decreases, so names and retired texts together stay within the bound.
    if (this.issued >= PREPARED_MAX || this.unnamed.has(text)) return undefined;
    // A fresh name per text (never reused for another text: node-postgres refuses a name with two texts).
    const name = `slaude_${this.issued++}`;
    this.names.set(text, name);
    return name;
  }
}
