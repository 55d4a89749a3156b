-- PostgreSQL 0008: tenants (SQLite 0008, the same tables). One row per Slack installation of the
-- app: a workspace (team install) or a whole Enterprise Grid org (org-wide install, is_enterprise_install = 1, keyed by
-- enterprise_id). The bot token and refresh token are sealed together with AES-256-GCM under the
-- vault's installation subkey; the AAD binds id, enterprise_id, team_id, is_enterprise_install,
-- app_id and key_id, so a ciphertext moved to another row or a row edited to name another tenant
-- does not decrypt. Uninstalled rows are kept as tombstones with the ciphertext wiped.
CREATE TABLE installations (
  id                     TEXT PRIMARY KEY,
  enterprise_id          TEXT,
  enterprise_name        TEXT,
  team_id                TEXT,
  team_name              TEXT,
  is_enterprise_install  INTEGER NOT NULL CHECK (is_enterprise_install IN (0, 1)),
  app_id                 TEXT NOT NULL,
  bot_id                 TEXT NOT NULL,
  bot_user_id            TEXT NOT NULL,
  scopes                 TEXT NOT NULL,          -- comma-separated, as Slack sends them
  status                 TEXT NOT NULL CHECK (status IN ('active', 'disabled', 'uninstalled')),
  status_reason          TEXT,
  key_id                 TEXT,
  token_nonce            BYTEA,
  token_ct               BYTEA,
  token_tag              BYTEA,
  token_expires_at       BIGINT,
  installed_by           TEXT,
  installed_at           BIGINT NOT NULL,
  updated_at             BIGINT NOT NULL,
  -- A team install names its team; an org-wide install names its enterprise.
  CHECK (is_enterprise_install = 1 OR team_id IS NOT NULL),
  CHECK (is_enterprise_install = 0 OR enterprise_id IS NOT NULL),
  CHECK (status <> 'active' OR status_reason IS NULL),
  CHECK (status <> 'disabled' OR status_reason IS NOT NULL),
  -- A live row holds its sealed tokens; a tombstone holds none.
  CHECK ((status = 'uninstalled') = (token_ct IS NULL)),
  CHECK ((token_ct IS NULL) = (token_nonce IS NULL) AND (token_ct IS NULL) = (token_tag IS NULL) AND (token_ct IS NULL) = (key_id IS NULL))
);
-- One live row per key. Two partial indexes, not one UNIQUE (enterprise_id, team_id): NULLs are
-- distinct in unique indexes, and an org-wide install has no team while a team install may have no
-- enterprise. Only live rows count, so a tombstone never blocks a reinstall.
CREATE UNIQUE INDEX installations_live_team ON installations (team_id)
  WHERE is_enterprise_install = 0 AND status <> 'uninstalled';
CREATE UNIQUE INDEX installations_live_enterprise ON installations (enterprise_id)
  WHERE is_enterprise_install = 1 AND status <> 'uninstalled';
CREATE INDEX installations_by_installed ON installations (installed_at) WHERE status <> 'uninstalled';

-- Slack OAuth install states (the `state` of /slack/install → /slack/oauth_redirect), shared by
-- every process so any replica finishes a flow another started. Kept only as a SHA-256 hash, taken
-- once (deleted as it is read), expired by time, capped in number.
CREATE TABLE oauth_states (
  state_hash  TEXT PRIMARY KEY,
  payload     TEXT NOT NULL,
  created_at  BIGINT NOT NULL,
  expires_at  BIGINT NOT NULL,
  CHECK (expires_at > created_at),
  CHECK (length(state_hash) = 64)
);
CREATE INDEX oauth_states_by_expiry ON oauth_states (expires_at);
CREATE INDEX oauth_states_by_created ON oauth_states (created_at);
