import path from "node:path";
import { envSchema } from "./env-schema.js";
import { ConfigError } from "./errors.js";
import { parseHostTokens } from "./host-token-teams.js";
import { withSecretFiles } from "./secret-files.js";
import { type AdminEntry, parseAdmins, type SlackDistribution, slackDistribution } from "./slack-tenancy.js";
import { type TenantLimits, tenantLimitsFrom } from "./tenant-limits.js";

// The only place that reads environment variables. Everything else receives a Config.

export type { AdminEntry, SlackDistribution } from "./slack-tenancy.js";

/**
 * Slack settings; `configured` is false when neither a bot token nor the install flow is set up, or
 * the mode's secret is missing. With a bot token alone, that workspace is the one installation.
 */
export interface SlackConfig {
  readonly mode: "http" | "socket";
  readonly botToken: string | undefined;
  readonly distribution: SlackDistribution | undefined;
  readonly signingSecret: string | undefined;
  readonly appToken: string | undefined;
  readonly apiUrl: string | undefined;
  readonly configured: boolean;
}

/** The parsed, validated process configuration. Secret-bearing fields are never logged. */
export interface Config {
  readonly production: boolean;
  readonly nodeEnv: "development" | "production" | "test";
  /** Base64 master key, or undefined: only a development start may then generate one. */
  readonly encryptionKey: string | undefined;
  readonly previousEncryptionKeys: readonly string[];
  readonly dataDir: string;
  readonly dbPath: string;
  /** PostgreSQL URL (a secret: it holds the password), or undefined for the SQLite file at dbPath. */
  readonly databaseUrl: string | undefined;
  /** Explicit registry path, or undefined for the default `./services.json` (optional in development). */
  readonly registryPath: string | undefined;
  readonly port: number;
  readonly bindHost: string;
  readonly publicUrl: string;
  /** This replica's internal base URL (an origin) for login forwarding; undefined: http://<bind host>:<bound port>. */
  readonly replicaUrl: string | undefined;
  readonly hostTokens: readonly string[];
  /** Host token → the Slack team (`T…`) or Enterprise Grid org (`E…`) it is bound to; confines the token to that tenant (src/tenancy/host-binding.ts). */
  readonly hostTokenTeams: ReadonlyMap<string, string>;
  /** Bearer token a Prometheus scraper presents on GET /metrics; unset: /metrics is refused. */
  readonly metricsToken: string | undefined;
  /** SLAUDE_ADMINS: `<team_id>:<user_id>` entries, or bare user ids (valid only with a single installation). */
  readonly admins: readonly AdminEntry[];
  readonly allowedHosts: readonly string[];
  readonly allowedOrigins: readonly string[];
  readonly logLevel: "debug" | "info" | "warn" | "error";
  readonly pool: {
    readonly maxChildren: number;
    readonly idleMs: number;
    readonly acquireTimeoutMs: number;
    readonly callTimeoutMs: number;
    readonly childUidBase: number | undefined;
  };
  readonly resultLimits: { readonly maxBytes: number; readonly maxLines: number };
  /** The result store: how long a truncated result's full text is kept, and each team's byte cap (oldest evicted first). */
  readonly resultStore: { readonly ttlMs: number; readonly maxBytesPerTeam: number };
  /** How long a database write waits (asynchronously) for another process's write lock before it fails. */
  readonly dbLockWaitMs: number;
  readonly chromiumPath: string;
  readonly slack: SlackConfig;
  /**
   * Which workspace serves people (SLAUDE_WORKSPACE): `auto` picks Slack when configured, else the
   * local workspace in development; src/workspace/choice.ts decides (and refuses production without Slack).
   */
  readonly workspace: "auto" | "slack" | "local" | "none";
  /** The only broker variables a vendor child inherits (PATH, locale, time zone). */
  readonly childBaseEnv: Readonly<Record<string, string>>;
  readonly approvalTimeoutMs: number;
  /** Login flows; `spareBrowsers` is never above `maxConcurrent` (so 0 when browser logins are off). */
  readonly login: {
    readonly linkTtlMs: number;
    readonly flowTimeoutMs: number;
    readonly maxConcurrent: number;
    readonly detachGraceMs: number;
    readonly spareBrowsers: number;
  };
  /** Bounds of the live turn state: threads tracked, and how long an explicit turn may stay open. */
  readonly turns: { readonly maxThreads: number; readonly maxTurnMs: number };
  /** Open MCP sessions: the cap per process, the deployment's cap (PostgreSQL), and how long an unused one stays open. */
  readonly mcpSessions: { readonly maxSessions: number; readonly maxLiveSessions: number; readonly idleMs: number };
  /** GET /v1/events: open streams at most, and events held for one slow stream before it is dropped. */
  readonly events: { readonly maxClients: number; readonly clientBuffer: number };
  /** In-memory caches: membership answers and decrypted credentials, each bounded in count and age. */
  readonly caches: { readonly membership: CacheLimits; readonly credentials: CacheLimits };
  /** What one tenant may hold or do whatever the others do: call rates and per-team caps (src/config/tenant-limits.ts). */
  readonly tenantLimits: TenantLimits;
}

/** A bounded cache: at most `max` entries, each at most `ttlMs` old. */
export interface CacheLimits {
  readonly max: number;
  readonly ttlMs: number;
}

/** Parses `env` (default: process.env) once; throws ConfigError naming every bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // An empty value means "not set" (a blank line in an env file), never 0 or the empty string.
  // Secrets given as `<NAME>_FILE` are read first, so the rules below see one value per secret.
  const present = Object.fromEntries(
    Object.entries(withSecretFiles(env)).filter(([, v]) => v !== undefined && v.trim() !== ""),
  );
  const parsed = envSchema.safeParse(present);
  if (!parsed.success) {
    // Name the variable and the problem; never echo its value (it may be a secret).
    const lines = parsed.error.issues.map((i) => `${i.path.map(String).join(".") || "(env)"}: ${i.message}`);
    throw new ConfigError("invalid_env", `invalid environment\n${lines.join("\n")}`);
  }
  const e = parsed.data;
  const production = e.NODE_ENV === "production";
  if (production && !e.SLAUDE_ENCRYPTION_KEY) {
    throw new ConfigError(
      "missing_key",
      "SLAUDE_ENCRYPTION_KEY (or SLAUDE_ENCRYPTION_KEY_FILE) is required when NODE_ENV=production (32 random bytes, base64: `openssl rand -base64 32`)",
    );
  }
  // Half a Slack setup is a mistake to report, not a reason to run silently without Slack.
  const distribution = slackDistribution(e);
  const slackVars = [e.SLACK_BOT_TOKEN, e.SLACK_SIGNING_SECRET, e.SLACK_APP_TOKEN, distribution].some(Boolean);
  if (slackVars) {
    const missing = [
      !e.SLACK_BOT_TOKEN &&
        !distribution &&
        "SLACK_BOT_TOKEN (or SLACK_CLIENT_ID, SLACK_CLIENT_SECRET and SLACK_STATE_SECRET for the install flow)",
      e.SLACK_MODE === "http" && !e.SLACK_SIGNING_SECRET && "SLACK_SIGNING_SECRET",
      e.SLACK_MODE === "socket" && !e.SLACK_APP_TOKEN && "SLACK_APP_TOKEN",
    ].filter(Boolean);
    if (missing.length)
      throw new ConfigError(
        "invalid_env",
        `invalid environment\nSlack is partly configured (SLACK_MODE=${e.SLACK_MODE}): set ${missing.join(" and ")}, or unset the other SLACK_* variables`,
      );
  }
  const dataDir = path.resolve(e.SLAUDE_DATA_DIR);
  const hostTokens = parseHostTokens(e.SLAUDE_HOST_TOKENS);
  const slackConfigured =
    (Boolean(e.SLACK_BOT_TOKEN) || Boolean(distribution)) &&
    (e.SLACK_MODE === "http" ? Boolean(e.SLACK_SIGNING_SECRET) : Boolean(e.SLACK_APP_TOKEN));
  return {
    production,
    nodeEnv: e.NODE_ENV,
    encryptionKey: e.SLAUDE_ENCRYPTION_KEY,
    previousEncryptionKeys: e.SLAUDE_ENCRYPTION_KEY_PREVIOUS,
    dataDir,
    dbPath: path.resolve(e.SLAUDE_DB_PATH ?? path.join(dataDir, "slaude.db")),
    databaseUrl: e.SLAUDE_DATABASE_URL,
    registryPath: e.SLAUDE_REGISTRY_PATH ? path.resolve(e.SLAUDE_REGISTRY_PATH) : undefined,
    port: e.PORT,
    bindHost: e.SLAUDE_BIND_HOST,
    publicUrl: (e.SLAUDE_PUBLIC_URL ?? `http://localhost:${e.PORT}`).replace(/\/+$/, ""),
    replicaUrl: e.SLAUDE_REPLICA_URL,
    hostTokens: hostTokens.tokens,
    hostTokenTeams: hostTokens.teams,
    metricsToken: e.SLAUDE_METRICS_TOKEN,
    admins: parseAdmins(e.SLAUDE_ADMINS),
    allowedHosts: e.SLAUDE_ALLOWED_HOSTS,
    allowedOrigins: e.SLAUDE_ALLOWED_ORIGINS,
    logLevel: e.SLAUDE_LOG_LEVEL,
    pool: {
      maxChildren: e.SLAUDE_POOL_MAX_CHILDREN,
      idleMs: e.SLAUDE_POOL_IDLE_SECONDS * 1000,
      acquireTimeoutMs: e.SLAUDE_POOL_ACQUIRE_TIMEOUT_SECONDS * 1000,
      callTimeoutMs: e.SLAUDE_CALL_TIMEOUT_SECONDS * 1000,
      childUidBase: e.SLAUDE_CHILD_UID_BASE,
    },
    resultLimits: { maxBytes: e.SLAUDE_RESULT_MAX_BYTES, maxLines: e.SLAUDE_RESULT_MAX_LINES },
    resultStore: {
      ttlMs: e.SLAUDE_RESULT_TTL_SECONDS * 1000,
      maxBytesPerTeam: e.SLAUDE_RESULT_STORE_MAX_BYTES_PER_TEAM,
    },
    dbLockWaitMs: e.SLAUDE_DB_LOCK_WAIT_MS,
    chromiumPath: e.SLAUDE_CHROMIUM_PATH,
    slack: {
      mode: e.SLACK_MODE,
      botToken: e.SLACK_BOT_TOKEN,
      distribution,
      signingSecret: e.SLACK_SIGNING_SECRET,
      appToken: e.SLACK_APP_TOKEN,
      apiUrl: e.SLACK_API_URL,
      configured: slackConfigured,
    },
    workspace: e.SLAUDE_WORKSPACE,
    childBaseEnv: {
      PATH: e.PATH ?? "/usr/local/bin:/usr/bin:/bin",
      ...(e.LANG ? { LANG: e.LANG } : {}),
      ...(e.TZ ? { TZ: e.TZ } : {}),
    },
    approvalTimeoutMs: e.SLAUDE_APPROVAL_TIMEOUT_SECONDS * 1000,
    login: {
      linkTtlMs: e.SLAUDE_LOGIN_LINK_TTL_SECONDS * 1000,
      flowTimeoutMs: e.SLAUDE_LOGIN_TIMEOUT_SECONDS * 1000,
      maxConcurrent: e.SLAUDE_LOGIN_MAX_CONCURRENT,
      detachGraceMs: e.SLAUDE_LOGIN_DETACH_GRACE_SECONDS * 1000,
      spareBrowsers: Math.min(e.SLAUDE_LOGIN_SPARE_BROWSERS, e.SLAUDE_LOGIN_MAX_CONCURRENT),
    },
    turns: { maxThreads: e.SLAUDE_TURNS_MAX_THREADS, maxTurnMs: e.SLAUDE_TURN_MAX_SECONDS * 1000 },
    mcpSessions: {
      maxSessions: e.SLAUDE_MCP_MAX_SESSIONS,
      maxLiveSessions: e.SLAUDE_MCP_MAX_LIVE_SESSIONS,
      idleMs: e.SLAUDE_MCP_SESSION_IDLE_SECONDS * 1000,
    },
    events: { maxClients: e.SLAUDE_EVENTS_MAX_CLIENTS, clientBuffer: e.SLAUDE_EVENTS_CLIENT_BUFFER },
    caches: {
      membership: { max: e.SLAUDE_MEMBERSHIP_CACHE_MAX, ttlMs: e.SLAUDE_MEMBERSHIP_CACHE_SECONDS * 1000 },
      credentials: { max: e.SLAUDE_CREDENTIAL_CACHE_MAX, ttlMs: e.SLAUDE_CREDENTIAL_CACHE_SECONDS * 1000 },
    },
    tenantLimits: tenantLimitsFrom(
      e,
      {
        children: e.SLAUDE_POOL_MAX_CHILDREN,
        logins: e.SLAUDE_LOGIN_MAX_CONCURRENT,
        mcpSessions: e.SLAUDE_MCP_MAX_SESSIONS,
        mcpLiveSessions: e.SLAUDE_MCP_MAX_LIVE_SESSIONS,
        eventStreams: e.SLAUDE_EVENTS_MAX_CLIENTS,
      },
      distribution !== undefined,
    ),
  };
}

/**
 * Reads a secret named by the service registry (e.g. an OAuth client secret's `clientSecretEnv`).
 * It lives here because config/ is the only module that reads the environment.
 */
export function envSecretSource(env: NodeJS.ProcessEnv = process.env): (name: string) => string | undefined {
  return (name) => {
    // `<name>_FILE` works here too; a bad file throws a ConfigError naming the variable.
    const v = withSecretFiles(env, [name])[name];
    return v && v.trim() !== "" ? v : undefined;
  };
}
