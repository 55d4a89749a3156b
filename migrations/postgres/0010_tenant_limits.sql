-- PostgreSQL 0010: limits per tenant (issue 20 item 9), shared by every replica.
-- Call-rate token buckets: one row per user (u:<team>:<user>) and per team (t:<team>). An absent
-- row is a full bucket, so rows that have refilled completely are deleted by the sweep without
-- changing any decision. SQLite has no such table: with one process the buckets live in memory.
CREATE TABLE rate_buckets (
  key TEXT PRIMARY KEY,
  tokens DOUBLE PRECISION NOT NULL,
  updated_at BIGINT NOT NULL,
  -- Whether the last take was granted: what the atomic upsert reports back.
  granted BOOLEAN NOT NULL
);
CREATE INDEX rate_buckets_updated_at ON rate_buckets (updated_at);
-- A team's live sessions, counted (and its own idle ones ended) under its per-team cap.
CREATE INDEX mcp_sessions_live_team ON mcp_sessions (team_id, last_seen_at) WHERE ended_at IS NULL;
