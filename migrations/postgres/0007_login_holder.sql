-- PostgreSQL 0007: which replica holds a login flow (issue 14, login across replicas). The replica
-- that opens a link records its SLAUDE_REPLICA_URL here; another replica receiving the viewer's page
-- or WebSocket forwards it there, and only there. NULL: no replica recorded (a link not yet opened).
-- SQLite has no such column: with SQLite there is one process, and every flow is local.
ALTER TABLE login_sessions ADD COLUMN holder_url TEXT;
