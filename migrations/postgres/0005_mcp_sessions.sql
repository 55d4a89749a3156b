-- PostgreSQL 0005: MCP sessions that any replica can serve (PostgreSQL only: SQLite keeps sessions in
-- its one process). What a session is: its thread, exactly as opened, and the initialize that opened
-- it, replayed by a replica that rebuilds the session. No secrets: the host token is checked per request.
CREATE TABLE mcp_sessions (
  id                  TEXT PRIMARY KEY,
  team_id             TEXT NOT NULL,
  thread_header       TEXT NOT NULL,
  protocol_version    TEXT NOT NULL,
  initialize          TEXT NOT NULL,
  created_at          BIGINT NOT NULL,
  last_seen_at        BIGINT NOT NULL,
  ended_at            BIGINT,
  CHECK (last_seen_at >= created_at)
);
-- The idle sweep: live sessions by last use.
CREATE INDEX mcp_sessions_live_idle ON mcp_sessions (last_seen_at) WHERE ended_at IS NULL;
-- The purge of ended sessions.
CREATE INDEX mcp_sessions_ended ON mcp_sessions (ended_at) WHERE ended_at IS NOT NULL;
