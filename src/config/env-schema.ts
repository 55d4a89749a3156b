import { z } from "zod";
import { replicaUrlSchema } from "./replica-url.js";
import { tenantLimitsEnv } from "./tenant-limits.js";

// The environment's variables as zod rules: names, types, bounds and defaults. env.ts parses with it
// and builds the Config; nothing else reads it.

const csv = z
  .string()
  .optional()
  .transform((v) =>
    (v ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean),
  );

const port = z.coerce.number().int().min(0).max(65535);
const positiveInt = z.coerce.number().int().positive();

export const envSchema = z.object({
  NODE_ENV: z.enum(["development", "production", "test"]).default("development"),
  SLAUDE_ENCRYPTION_KEY: z.string().optional(),
  SLAUDE_ENCRYPTION_KEY_PREVIOUS: csv,
  SLAUDE_DATA_DIR: z.string().min(1).default("./data"),
  SLAUDE_DB_PATH: z.string().min(1).optional(),
  // postgres:// or postgresql:// selects the PostgreSQL store; unset keeps the SQLite file.
  SLAUDE_DATABASE_URL: z
    .string()
    .regex(
      /^postgres(ql)?:\/\/\S+$/,
      "must be a postgres:// URL (e.g. postgres://slaude:PASSWORD@db.internal:5432/slaude?sslmode=verify-full)",
    )
    .optional(),
  SLAUDE_REGISTRY_PATH: z.string().min(1).optional(),
  PORT: port.default(8080),
  SLAUDE_BIND_HOST: z.string().min(1).default("127.0.0.1"),
  SLAUDE_PUBLIC_URL: z.url().optional(),
  // Where the other replicas reach this one to forward a login it holds (issue 14).
  SLAUDE_REPLICA_URL: replicaUrlSchema.optional(),
  SLAUDE_HOST_TOKENS: csv,
  SLAUDE_METRICS_TOKEN: z.string().min(16, "must be at least 16 characters").optional(),
  SLAUDE_ADMINS: csv,
  SLAUDE_ALLOWED_HOSTS: csv,
  SLAUDE_ALLOWED_ORIGINS: csv,
  SLAUDE_LOG_LEVEL: z.enum(["debug", "info", "warn", "error"]).default("info"),
  SLAUDE_POOL_MAX_CHILDREN: positiveInt.default(32),
  SLAUDE_POOL_IDLE_SECONDS: positiveInt.default(600),
  SLAUDE_POOL_ACQUIRE_TIMEOUT_SECONDS: positiveInt.default(30),
  SLAUDE_CALL_TIMEOUT_SECONDS: positiveInt.default(120),
  SLAUDE_DB_LOCK_WAIT_MS: positiveInt.max(600_000).default(5_000),
  SLAUDE_RESULT_MAX_BYTES: positiveInt.default(50_000),
  SLAUDE_RESULT_MAX_LINES: positiveInt.default(2_000),
  // The result store (issue 15): full text of truncated results, for their caller, for a while.
  SLAUDE_RESULT_TTL_SECONDS: positiveInt.max(604_800).default(3_600),
  SLAUDE_RESULT_STORE_MAX_BYTES_PER_TEAM: positiveInt.default(67_108_864),
  // Never 0 (root) or a system uid: children must be unprivileged.
  SLAUDE_CHILD_UID_BASE: z.coerce
    .number()
    .int()
    .min(1000, "must be an unprivileged uid (>= 1000)")
    .max(4_000_000_000)
    .optional(),
  SLAUDE_CHROMIUM_PATH: z.string().min(1).default("/usr/bin/chromium"),
  SLACK_MODE: z.enum(["http", "socket"]).default("http"),
  SLACK_BOT_TOKEN: z.string().optional(),
  SLACK_SIGNING_SECRET: z.string().optional(),
  SLACK_APP_TOKEN: z.string().optional(),
  SLACK_API_URL: z.url().optional(),
  // Distribution (many workspaces install the app through Slack's OAuth flow): all three together.
  SLACK_CLIENT_ID: z.string().min(1).optional(),
  SLACK_CLIENT_SECRET: z.string().min(1).optional(),
  SLACK_STATE_SECRET: z.string().min(16, "must be at least 16 characters").optional(),
  SLACK_OAUTH_AUTHORIZE_URL: z.url().default("https://slack.com/oauth/v2/authorize"),
  // Team (T…) or enterprise (E…) ids allowed to install; empty: anyone.
  SLAUDE_SLACK_ALLOWED_TEAMS: csv,
  SLAUDE_WORKSPACE: z.enum(["auto", "slack", "local", "none"]).default("auto"),
  SLAUDE_APPROVAL_TIMEOUT_SECONDS: positiveInt.default(120),
  SLAUDE_LOGIN_LINK_TTL_SECONDS: positiveInt.default(600),
  SLAUDE_LOGIN_TIMEOUT_SECONDS: positiveInt.default(600),
  // 0 turns browser logins off (and with them the spare browsers).
  SLAUDE_LOGIN_MAX_CONCURRENT: z.coerce.number().int().min(0).default(4),
  // Pre-started Chromium kept for the next login; each holds a whole browser, hence the cap.
  SLAUDE_LOGIN_SPARE_BROWSERS: z.coerce.number().int().min(0).max(4).default(1),
  SLAUDE_LOGIN_DETACH_GRACE_SECONDS: positiveInt.default(60),
  SLAUDE_TURNS_MAX_THREADS: positiveInt.default(10_000),
  SLAUDE_TURN_MAX_SECONDS: positiveInt.default(3_600),
  // Memory bounds (issue 9 item 15): every session table and cache has a cap and an expiry.
  SLAUDE_MCP_MAX_SESSIONS: positiveInt.default(1_000),
  SLAUDE_MCP_SESSION_IDLE_SECONDS: positiveInt.default(1_800),
  // PostgreSQL: live session records of the whole deployment (every replica's sessions together).
  SLAUDE_MCP_MAX_LIVE_SESSIONS: positiveInt.default(10_000),
  SLAUDE_EVENTS_MAX_CLIENTS: positiveInt.max(1_000).default(16),
  SLAUDE_EVENTS_CLIENT_BUFFER: positiveInt.max(100_000).default(1_000),
  SLAUDE_MEMBERSHIP_CACHE_MAX: positiveInt.default(10_000),
  SLAUDE_MEMBERSHIP_CACHE_SECONDS: positiveInt.default(60),
  SLAUDE_CREDENTIAL_CACHE_MAX: positiveInt.default(1_000),
  SLAUDE_CREDENTIAL_CACHE_SECONDS: positiveInt.default(900),
  // Limits per tenant (issue 20 item 9): call rates per user and team, per-team caps (tenant-limits.ts).
  SLAUDE_CALL_RATE_PER_USER: tenantLimitsEnv.SLAUDE_CALL_RATE_PER_USER,
  SLAUDE_CALL_RATE_PER_TEAM: tenantLimitsEnv.SLAUDE_CALL_RATE_PER_TEAM,
  SLAUDE_POOL_MAX_CHILDREN_PER_TEAM: tenantLimitsEnv.SLAUDE_POOL_MAX_CHILDREN_PER_TEAM,
  SLAUDE_LOGIN_MAX_CONCURRENT_PER_TEAM: tenantLimitsEnv.SLAUDE_LOGIN_MAX_CONCURRENT_PER_TEAM,
  SLAUDE_MCP_MAX_SESSIONS_PER_TEAM: tenantLimitsEnv.SLAUDE_MCP_MAX_SESSIONS_PER_TEAM,
  SLAUDE_EVENTS_MAX_CLIENTS_PER_TEAM: tenantLimitsEnv.SLAUDE_EVENTS_MAX_CLIENTS_PER_TEAM,
  PATH: z.string().optional(),
  LANG: z.string().optional(),
  TZ: z.string().optional(),
});
