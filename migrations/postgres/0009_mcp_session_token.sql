-- PostgreSQL 0009: an MCP session is bound to the host token that opened it. Every replica compares
-- the token of each later request with this digest: `<key id>:<HMAC-SHA256 hex>` under the master
-- key's "mcp-session-token" subkey (src/server/session-token.ts), never the token itself. Sessions
-- recorded before this migration have none and are served to nobody (their clients re-initialize).
-- SQLite needs no counterpart: its sessions live in the one process's memory.
ALTER TABLE mcp_sessions ADD COLUMN token_digest TEXT;
