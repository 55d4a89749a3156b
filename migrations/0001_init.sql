-- 0001: the whole first schema. Times are integer milliseconds since the Unix epoch (UTC).

-- One owner's encrypted credential for one service, in one scope.
CREATE TABLE connections (
  id             TEXT PRIMARY KEY,
  team_id        TEXT NOT NULL,
  owner_user_id  TEXT,                       -- NULL only for scope 'shared' (the broker's own identity)
  service        TEXT NOT NULL,
  scope          TEXT NOT NULL CHECK (scope IN ('thread', 'user', 'shared')),
  channel_id     TEXT,                       -- set only for scope 'thread'
  thread_ts      TEXT,                       -- set only for scope 'thread'
  status         TEXT NOT NULL CHECK (status IN ('active', 'needs_login', 'revoked', 'expired')),
  key_id         TEXT,                       -- key the ciphertext is under; NULL once wiped
  secret_nonce   BLOB,
  secret_ct      BLOB,
  secret_tag     BLOB,
  label          TEXT,                       -- non-secret description, e.g. the account name
  created_by     TEXT NOT NULL,              -- Slack user id, or 'cli:<who>'
  created_at     INTEGER NOT NULL,
  updated_at     INTEGER NOT NULL,
  expires_at     INTEGER NOT NULL,
  ended_at       INTEGER,                    -- when it was revoked or expired
  ended_reason   TEXT,
  CHECK ((scope = 'thread') = (channel_id IS NOT NULL AND thread_ts IS NOT NULL)),
  CHECK ((scope = 'shared') = (owner_user_id IS NULL)),
  CHECK (status IN ('active', 'needs_login') OR (secret_ct IS NULL AND secret_nonce IS NULL AND secret_tag IS NULL)),
  CHECK ((secret_ct IS NULL) = (secret_nonce IS NULL) AND (secret_ct IS NULL) = (secret_tag IS NULL))
);

-- SQLite treats NULLs as distinct in UNIQUE indexes, so each scope dedupes with its own partial index.
-- Only live rows count: a revoked or expired row never blocks its replacement.
CREATE UNIQUE INDEX connections_live_thread ON connections (team_id, owner_user_id, service, channel_id, thread_ts)
  WHERE scope = 'thread' AND status IN ('active', 'needs_login');
CREATE UNIQUE INDEX connections_live_user ON connections (team_id, owner_user_id, service)
  WHERE scope = 'user' AND status IN ('active', 'needs_login');
CREATE UNIQUE INDEX connections_live_shared ON connections (team_id, service)
  WHERE scope = 'shared' AND status IN ('active', 'needs_login');
CREATE INDEX connections_by_thread ON connections (team_id, channel_id, thread_ts, service) WHERE status = 'active';
CREATE INDEX connections_by_owner ON connections (team_id, owner_user_id);
CREATE INDEX connections_by_expiry ON connections (expires_at) WHERE status IN ('active', 'needs_login');

-- Standing permission for a borrower to use an owner's connection in one thread.
CREATE TABLE grants (
  id                TEXT PRIMARY KEY,
  connection_id     TEXT NOT NULL REFERENCES connections (id),
  team_id           TEXT NOT NULL,
  channel_id        TEXT NOT NULL,
  thread_ts         TEXT NOT NULL,
  owner_user_id     TEXT NOT NULL,
  borrower_user_id  TEXT NOT NULL,
  service           TEXT NOT NULL,
  created_at        INTEGER NOT NULL,
  revoked_at        INTEGER,
  revoked_by        TEXT
);
CREATE UNIQUE INDEX grants_live ON grants (connection_id, borrower_user_id, team_id, channel_id, thread_ts) WHERE revoked_at IS NULL;
CREATE INDEX grants_by_owner ON grants (team_id, owner_user_id) WHERE revoked_at IS NULL;
CREATE INDEX grants_by_borrower ON grants (team_id, borrower_user_id) WHERE revoked_at IS NULL;

-- A question to an owner, bound to the exact call; decided once, consumed once.
CREATE TABLE approvals (
  id                TEXT PRIMARY KEY,
  nonce             TEXT NOT NULL UNIQUE,
  connection_id     TEXT NOT NULL REFERENCES connections (id),
  team_id           TEXT NOT NULL,
  channel_id        TEXT NOT NULL,
  thread_ts         TEXT NOT NULL,
  owner_user_id     TEXT NOT NULL,
  borrower_user_id  TEXT NOT NULL,
  service           TEXT NOT NULL,
  tool              TEXT NOT NULL,
  args_hash         TEXT NOT NULL,
  status            TEXT NOT NULL CHECK (status IN ('pending', 'allowed_thread', 'allowed_once', 'denied', 'expired', 'consumed')),
  created_at        INTEGER NOT NULL,
  expires_at        INTEGER NOT NULL,
  decided_at        INTEGER,
  decided_by        TEXT,
  card_channel      TEXT,                    -- where the Slack card lives, to update it in place
  card_ts           TEXT
);
CREATE INDEX approvals_pending ON approvals (expires_at) WHERE status = 'pending';

-- Append-only record of every decision and use. Never argument values, outputs or secrets.
CREATE TABLE audit (
  seq               INTEGER PRIMARY KEY AUTOINCREMENT,
  at                INTEGER NOT NULL,
  event             TEXT NOT NULL,
  team_id           TEXT,
  channel_id        TEXT,
  thread_ts         TEXT,
  caller_user_id    TEXT,
  owner_user_id     TEXT,
  connection_id     TEXT,
  service           TEXT,
  tool              TEXT,
  args_hash         TEXT,
  decision          TEXT,
  approver_user_id  TEXT,
  duration_ms       INTEGER,
  result_bytes      INTEGER,
  error_code        TEXT,
  actor             TEXT                     -- who acted when not the caller: 'cli:…', 'reaper', an admin id
);
CREATE INDEX audit_by_time ON audit (at);
CREATE INDEX audit_by_connection ON audit (connection_id);
CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit BEGIN SELECT RAISE(ABORT, 'audit is append-only'); END;
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit BEGIN SELECT RAISE(ABORT, 'audit is append-only'); END;

-- One login flow: the one-time link (stored only as a hash) and its progress.
CREATE TABLE login_sessions (
  id             TEXT PRIMARY KEY,
  token_hash     TEXT NOT NULL UNIQUE,
  team_id        TEXT NOT NULL,
  user_id        TEXT NOT NULL,
  service        TEXT NOT NULL,
  scope          TEXT NOT NULL CHECK (scope IN ('thread', 'user', 'shared')),
  channel_id     TEXT,
  thread_ts      TEXT,
  status         TEXT NOT NULL CHECK (status IN ('minted', 'opened', 'completed', 'cancelled', 'expired', 'failed')),
  created_at     INTEGER NOT NULL,
  expires_at     INTEGER NOT NULL,
  opened_at      INTEGER,
  ended_at       INTEGER,
  connection_id  TEXT REFERENCES connections (id)
);
CREATE INDEX login_sessions_live ON login_sessions (expires_at) WHERE status IN ('minted', 'opened');

-- Each service's tools/list, so mcp_describe answers without spawning.
CREATE TABLE tool_metadata (
  service       TEXT PRIMARY KEY,
  content_hash  TEXT NOT NULL,
  tools_json    TEXT NOT NULL,
  fetched_at    INTEGER NOT NULL
);
