import { StoreError } from "../errors.js";

// What the PostgreSQL handle and its lock session share: the advisory lock key and the error mapping.

/** A stable 64-bit advisory lock key for a name (PostgreSQL hashes it: one function, every replica agrees). */
export const LOCK_KEY_SQL = "hashtextextended($1, 0)";

/**
 * SQLSTATEs of a server that is going away or not there yet: admin_shutdown (a fast shutdown cut the
 * session), crash_shutdown, cannot_connect_now (starting up or recovering), too_many_connections.
 * Class 08 (connection exception) is matched by its prefix.
 */
const UNAVAILABLE_SQLSTATES = new Set(["57P01", "57P02", "57P03", "53300"]);
/** Socket errors of a server that refused, reset or never answered the connection. */
const UNAVAILABLE_ERRNOS = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
  "ENOTFOUND",
]);
/** What node-postgres says, without a code, when a connection dies or cannot be had in time. */
const UNAVAILABLE_MESSAGES =
  /^(Connection terminated|Connection ended unexpectedly|timeout exceeded when trying to connect|Client has encountered a connection error and is not queryable)/;

/**
 * Maps driver errors the store gives a meaning to: a lock wait past `lock_timeout` is `busy`; a
 * server that cannot be reached, is restarting or cut the session is `unavailable`. Anything
 * else (a constraint, a bug, one of our StoreErrors) is returned unchanged.
 */
export function mapPgError(err: unknown): unknown {
  if (err instanceof StoreError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  const message = err instanceof Error ? err.message : String(err);
  if (code === "55P03") return new StoreError("busy", `database lock wait timed out: ${message}`, { cause: err });
  const unavailable =
    typeof code === "string"
      ? UNAVAILABLE_SQLSTATES.has(code) || UNAVAILABLE_ERRNOS.has(code) || /^08[0-9A-Z]{3}$/.test(code)
      : UNAVAILABLE_MESSAGES.test(message);
  if (unavailable)
    return new StoreError("unavailable", `the database is unavailable (${typeof code === "string" ? code : message})`, {
      cause: err,
    });
  return err;
}
