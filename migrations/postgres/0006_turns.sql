-- PostgreSQL 0006: the live turns of every served thread, shared by all replicas (no SQLite
-- counterpart: one process keeps them in memory). One row per thread holds the thread's whole turn
-- state as JSONB (src/turns/turn-rules.ts ThreadTurns), changed under SELECT ... FOR UPDATE with the
-- rules applied in JS; a tool call reads it by primary key. turn_ids maps a live turn id to its
-- thread for POST /v1/turns/end. Rows idle past the turn max age are deleted by the turn reaper.
CREATE TABLE turn_threads (
  thread_key  TEXT PRIMARY KEY,
  state       JSONB NOT NULL,
  seen_at     BIGINT NOT NULL
);
CREATE INDEX turn_threads_seen ON turn_threads (seen_at);

CREATE TABLE turn_ids (
  turn_id     TEXT PRIMARY KEY,
  thread_key  TEXT NOT NULL REFERENCES turn_threads (thread_key) ON DELETE CASCADE
);
CREATE INDEX turn_ids_thread ON turn_ids (thread_key);
