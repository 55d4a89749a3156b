import { StoreError } from "../errors.js";

// What the PostgreSQL handle and its lock session share: the advisory lock key and the error mapping.

/** A stable 64-bit advisory lock key for a name (PostgreSQL hashes it: one function, every replica agrees). */
export const LOCK_KEY_SQL = "hashtextextended($1, 0)";

/** Maps driver errors the store gives a meaning to: a lock wait past `lock_timeout` is `busy`. */
export function mapPgError(err: unknown): unknown {
  const code = (err as { code?: unknown } | null)?.code;
  if (code === "55P03") return new StoreError("busy", `database lock wait timed out: ${(err as Error).message}`, { cause: err });
  return err;
}
