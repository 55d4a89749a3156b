-- 0007: tool pinning (rug-pull protection). Each tool's definition hash is pinned per team and
-- service when first seen or when an admin accepts it; a vendor serving a different definition
-- later quarantines the tool until an admin accepts or rejects the change. Definitions are vendor
-- metadata, redacted with the fetching connection's credential and cut to a fixed size.
CREATE TABLE tool_pins (
  team_id             TEXT NOT NULL,
  service             TEXT NOT NULL,
  tool                TEXT NOT NULL,
  status              TEXT NOT NULL CHECK (status IN ('pinned', 'quarantined', 'new', 'rejected')),
  pinned_hash         TEXT,                  -- NULL for a tool never accepted (new, or a rejected new tool)
  pinned_definition   TEXT,
  pending_hash        TEXT,                  -- the changed definition waiting for (or refused by) an admin
  pending_definition  TEXT,
  first_seen_at       INTEGER NOT NULL,
  changed_at          INTEGER NOT NULL,
  decided_at          INTEGER,
  decided_by          TEXT,
  PRIMARY KEY (team_id, service, tool),
  CHECK (status <> 'pinned' OR (pinned_hash IS NOT NULL AND pending_hash IS NULL)),
  CHECK (status = 'pinned' OR pending_hash IS NOT NULL),
  CHECK (status <> 'quarantined' OR pinned_hash IS NOT NULL)
);
-- The admin views list what waits for a decision, newest change first.
CREATE INDEX tool_pins_undecided ON tool_pins (changed_at) WHERE status <> 'pinned';
