-- PostgreSQL 0003: the result store (SQLite 0006). Full, redacted text of a truncated tool result,
-- sealed like a credential (AAD binds id, team, owner and thread); deleted on expiry or eviction.
CREATE TABLE stored_results (
  id             TEXT PRIMARY KEY,
  team_id        TEXT NOT NULL,
  channel_id     TEXT NOT NULL,
  thread_ts      TEXT NOT NULL,
  owner_user_id  TEXT NOT NULL,
  call_id        TEXT NOT NULL,
  service        TEXT NOT NULL,
  tool           TEXT NOT NULL,
  size_bytes     BIGINT NOT NULL CHECK (size_bytes >= 0),
  created_at     BIGINT NOT NULL,
  expires_at     BIGINT NOT NULL,
  key_id         TEXT NOT NULL,
  nonce          BYTEA NOT NULL,
  ciphertext     BYTEA NOT NULL,
  tag            BYTEA NOT NULL
);
CREATE INDEX stored_results_by_team ON stored_results (team_id, created_at);
CREATE INDEX stored_results_by_expiry ON stored_results (expires_at);
