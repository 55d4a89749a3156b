-- PostgreSQL 0004: tool pinning (SQLite 0007). A tool's definition hash pinned per team and service;
-- a changed definition quarantines the tool until an admin accepts or rejects it.
CREATE TABLE tool_pins (
  team_id             TEXT NOT NULL,
  service             TEXT NOT NULL,
  tool                TEXT NOT NULL,
  status              TEXT NOT NULL CHECK (status IN ('pinned', 'quarantined', 'new', 'rejected')),
  pinned_hash         TEXT,
  pinned_definition   TEXT,
  pending_hash        TEXT,
  pending_definition  TEXT,
  first_seen_at       BIGINT NOT NULL,
  changed_at          BIGINT NOT NULL,
  decided_at          BIGINT,
  decided_by          TEXT,
  PRIMARY KEY (team_id, service, tool),
  CHECK (status <> 'pinned' OR (pinned_hash IS NOT NULL AND pending_hash IS NULL)),
  CHECK (status = 'pinned' OR pending_hash IS NOT NULL),
  CHECK (status <> 'quarantined' OR pinned_hash IS NOT NULL)
);
CREATE INDEX tool_pins_undecided ON tool_pins (changed_at) WHERE status <> 'pinned';
