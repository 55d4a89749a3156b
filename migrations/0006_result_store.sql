-- The result store (issue 15, part 1): the full, redacted text of a tool result that was too big
-- to return inline, kept for a while so its caller can page through it with resources/read.
-- Encrypted like a credential (AES-256-GCM under the vault's result subkey), the AAD binding the
-- id, team, owner and thread below: a row moved to another owner or thread does not decrypt.
-- Rows are deleted (secure_delete overwrites them) when they expire or the team's cap evicts them.
CREATE TABLE stored_results (
  id             TEXT PRIMARY KEY,
  team_id        TEXT NOT NULL,
  channel_id     TEXT NOT NULL,
  thread_ts      TEXT NOT NULL,
  owner_user_id  TEXT NOT NULL,
  call_id        TEXT NOT NULL,
  service        TEXT NOT NULL,
  tool           TEXT NOT NULL,
  size_bytes     INTEGER NOT NULL CHECK (size_bytes >= 0),
  created_at     INTEGER NOT NULL,
  expires_at     INTEGER NOT NULL,
  key_id         TEXT NOT NULL,
  nonce          BLOB NOT NULL,
  ciphertext     BLOB NOT NULL,
  tag            BLOB NOT NULL
);
-- Eviction takes a team's oldest first; the per-team total is summed over this index.
CREATE INDEX stored_results_by_team ON stored_results (team_id, created_at);
CREATE INDEX stored_results_by_expiry ON stored_results (expires_at);
