-- 0009: `audit.seq` without AUTOINCREMENT. AUTOINCREMENT made every commit of audit rows also
-- rewrite the `sqlite_sequence` page (one WAL frame of about five per warm-call commit). On this
-- table it bought nothing: rows are never deleted (the triggers below), so the next rowid, the
-- largest plus one, is never a reused number; and a rolled-back insert never kept its number even
-- with AUTOINCREMENT, since `sqlite_sequence` rolls back with it. The table is rebuilt (SQLite
-- cannot drop AUTOINCREMENT in place): same columns in the same order, every row with its seq,
-- the same indexes and triggers. DROP TABLE runs no DELETE trigger.
CREATE TABLE audit_rebuilt (
  seq               INTEGER PRIMARY KEY,
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
  actor             TEXT,                    -- who acted when not the caller: 'cli:…', 'reaper', an admin id
  call_id           TEXT
);
INSERT INTO audit_rebuilt (seq, at, event, team_id, channel_id, thread_ts, caller_user_id, owner_user_id, connection_id,
  service, tool, args_hash, decision, approver_user_id, duration_ms, result_bytes, error_code, actor, call_id)
SELECT seq, at, event, team_id, channel_id, thread_ts, caller_user_id, owner_user_id, connection_id,
  service, tool, args_hash, decision, approver_user_id, duration_ms, result_bytes, error_code, actor, call_id
FROM audit ORDER BY seq;
DROP TABLE audit;
ALTER TABLE audit_rebuilt RENAME TO audit;
DELETE FROM sqlite_sequence WHERE name IN ('audit', 'audit_rebuilt');
CREATE INDEX audit_by_time ON audit (at);
CREATE INDEX audit_by_connection ON audit (connection_id);
CREATE INDEX audit_by_call ON audit (call_id) WHERE call_id IS NOT NULL;
CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit BEGIN SELECT RAISE(ABORT, 'audit is append-only'); END;
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit BEGIN SELECT RAISE(ABORT, 'audit is append-only'); END;
