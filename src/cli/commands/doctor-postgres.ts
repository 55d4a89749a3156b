// `doctor` on PostgreSQL (SLAUDE_DATABASE_URL): the store it would use, whether the server answers,
// how far the schema is migrated, that the role is an ordinary one, that no other role may connect
// to the database (PUBLIC's default CONNECT and TEMP revoked), and that every stored credential
// is sealed under a configured key. Read-only: it never migrates or writes. The URL's password is
// never printed: findings name the server as host:port/database.

import pg from "pg";
import type { Config } from "../../config/env.js";
import { errorMessage } from "../../domain/errors.js";
import { readPgMigrations } from "../../store/postgres/migrator.js";
import type { Finding } from "./doctor.js";
import { configuredKeyIds, storedKeysFinding } from "./doctor-runtime.js";

/** Where the URL points, without its user and password: host:port/database (sslmode=…). */
export function describeDatabaseUrl(url: string): string {
  try {
    const u = new URL(url);
    const ssl = u.searchParams.get("sslmode");
    return `${u.hostname || "localhost"}:${u.port || "5432"}${u.pathname || "/"}${ssl ? ` (sslmode=${ssl})` : ""}`;
  } catch {
    return "(unparseable URL)";
  }
}

/** The PostgreSQL findings: store, database (connectivity + schema), role, stored credentials. */
export async function checkPostgres(config: Config, url: string): Promise<Finding[]> {
  const where = describeDatabaseUrl(url);
  const out: Finding[] = [
    {
      check: "store",
      level: "ok",
      message: `PostgreSQL at ${where} (SLAUDE_DATABASE_URL; SLAUDE_DB_PATH is not used)`,
    },
  ];
  const client = new pg.Client({
    connectionString: url,
    application_name: "slaude-connect doctor",
    connectionTimeoutMillis: 10_000,
    statement_timeout: 10_000,
  });
  client.on("error", () => {});
  try {
    await client.connect();
  } catch (e) {
    out.push({
      check: "database",
      level: "error",
      message: `cannot connect to ${where}: ${errorMessage(e)}`,
      fix: "check SLAUDE_DATABASE_URL (host, port, database, user, password, sslmode) and that the server accepts this host",
    });
    await client.end().catch(() => {});
    return out;
  }
  try {
    out.push(await checkSchema(client, where));
    out.push(await checkRole(client, config));
    out.push(await checkDatabaseAccess(client, config));
    const keys = await checkStoredKeys(client, config);
    if (keys) out.push(keys);
  } catch (e) {
    out.push({ check: "database", level: "error", message: `${where}: ${errorMessage(e)}` });
  } finally {
    await client.end().catch(() => {});
  }
  return out;
}

async function checkSchema(client: pg.Client, where: string): Promise<Finding> {
  const server =
    (await client.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0]?.v.split(" ")[0] ??
    "?";
  const known = readPgMigrations().at(-1)?.version ?? 0;
  const hasTable = (await client.query<{ t: string | null }>("SELECT to_regclass('schema_migrations')::text AS t"))
    .rows[0]?.t;
  const current = hasTable
    ? ((await client.query<{ v: number | null }>("SELECT max(version) AS v FROM schema_migrations")).rows[0]?.v ?? 0)
    : 0;
  const at = `PostgreSQL ${server} at ${where}, schema ${current}`;
  if (current > known)
    return {
      check: "database",
      level: "error",
      message: `${at} is newer than this version knows (${known})`,
      fix: "upgrade slaude-connect",
    };
  if (current < known)
    return {
      check: "database",
      level: "warn",
      message: `${at}, ${known - current} migration(s) pending`,
      fix: "run `slaude-connect migrate` or start the server (replicas starting together migrate once)",
    };
  return { check: "database", level: "ok", message: `${at} (up to date), answering` };
}

async function checkRole(client: pg.Client, config: Config): Promise<Finding> {
  const r = (
    await client.query<{ name: string; su: boolean }>(
      "SELECT current_user AS name, rolsuper AS su FROM pg_roles WHERE rolname = current_user",
    )
  ).rows[0];
  if (!r) return { check: "database role", level: "warn", message: "the current role is not in pg_roles" };
  if (!r.su) return { check: "database role", level: "ok", message: `${r.name} is an ordinary role (not a superuser)` };
  return {
    check: "database role",
    level: config.production ? "error" : "warn",
    message: `${r.name} is a superuser: a leaked broker URL would own the whole server`,
    fix: "create an ordinary role that owns the broker's database (CREATE ROLE … LOGIN PASSWORD …; CREATE DATABASE … OWNER …) and use it in SLAUDE_DATABASE_URL",
  };
}

/** How many other roles' names a finding lists. */
const MAX_NAMED_ROLES = 5;

/**
 * Whether roles other than the broker's may connect: PostgreSQL grants CONNECT and TEMP on every new
 * database to PUBLIC, and any role connected can LISTEN on the broker's signal channel, NOTIFY on it,
 * and take (or watch, in pg_locks) advisory locks. Superusers are not counted: nothing keeps them out.
 */
async function checkDatabaseAccess(client: pg.Client, config: Config): Promise<Finding> {
  const r = (
    await client.query<{ db: string; me: string; pub_connect: boolean; pub_temp: boolean; others: string[] }>(
      `SELECT current_database() AS db, current_user AS me,
              has_database_privilege('public', current_database(), 'CONNECT') AS pub_connect,
              has_database_privilege('public', current_database(), 'TEMP') AS pub_temp,
              COALESCE((SELECT array_agg(rolname::text ORDER BY rolname) FROM pg_roles
                         WHERE rolcanlogin AND NOT rolsuper AND rolname <> current_user AND rolname NOT LIKE 'pg\\_%'
                           AND has_database_privilege(oid, current_database(), 'CONNECT')), '{}') AS others`,
    )
  ).rows[0]!;
  const db = pg.escapeIdentifier(r.db);
  const fix = `as the database owner or a superuser: REVOKE CONNECT, TEMP ON DATABASE ${db} FROM PUBLIC; GRANT CONNECT, TEMP ON DATABASE ${db} TO ${pg.escapeIdentifier(r.me)}; (docs/operations.md, "PostgreSQL roles")`;
  const level = config.production ? "error" : "warn";
  if (r.pub_connect || r.pub_temp) {
    const what = [r.pub_connect ? "CONNECT" : "", r.pub_temp ? "TEMP" : ""].filter(Boolean).join(" and ");
    return {
      check: "database access",
      level,
      message: `PUBLIC has ${what} on database ${r.db}: every role on the server can connect, listen to the broker's signals and contend for its locks`,
      fix,
    };
  }
  if (r.others.length) {
    const named =
      r.others.slice(0, MAX_NAMED_ROLES).join(", ") +
      (r.others.length > MAX_NAMED_ROLES ? ` and ${r.others.length - MAX_NAMED_ROLES} more` : "");
    return {
      check: "database access",
      level: "warn",
      message: `other roles may connect to database ${r.db}: ${named}`,
      fix: `REVOKE CONNECT ON DATABASE ${db} FROM <role> for each one the broker does not need`,
    };
  }
  return {
    check: "database access",
    level: "ok",
    message: `only ${r.me} (and superusers) may connect to database ${r.db}`,
  };
}

/** As the SQLite check: credentials sealed under a key id the configured key ring lacks (serve refuses to start). */
async function checkStoredKeys(client: pg.Client, config: Config): Promise<Finding | undefined> {
  const hasTable = (await client.query<{ t: string | null }>("SELECT to_regclass('connections')::text AS t")).rows[0]
    ?.t;
  if (!hasTable) return undefined;
  let have: Set<string>;
  try {
    have = configuredKeyIds(config);
  } catch {
    return undefined; // the key findings already say what is wrong with the keys
  }
  // Slack installations' tokens too, once their table exists (migration 0008).
  const withInstallations = (await client.query<{ t: string | null }>("SELECT to_regclass('installations')::text AS t"))
    .rows[0]?.t;
  const keyIds = withInstallations
    ? "SELECT key_id FROM connections UNION ALL SELECT key_id FROM installations"
    : "SELECT key_id FROM connections";
  const sealed = (
    await client.query<{ k: string; n: number }>(
      `SELECT key_id AS k, count(*)::int AS n FROM (${keyIds}) AS s WHERE key_id IS NOT NULL GROUP BY key_id ORDER BY key_id`,
    )
  ).rows;
  const lost = sealed.filter((r) => !have.has(r.k)).map((r) => `${r.n} under key ${r.k}`);
  return storedKeysFinding(lost);
}
