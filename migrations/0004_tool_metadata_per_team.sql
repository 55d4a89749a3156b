-- The tool metadata cache is keyed per team, and rows written before it were stored unredacted
-- (a vendor could put its credential in a tool description): they are dropped, not migrated.
-- The cache refills, redacted, the next time a connection's child starts.
DROP TABLE tool_metadata;
CREATE TABLE tool_metadata (
  team_id       TEXT NOT NULL,
  service       TEXT NOT NULL,
  content_hash  TEXT NOT NULL,
  tools_json    TEXT NOT NULL,
  fetched_at    INTEGER NOT NULL,
  PRIMARY KEY (team_id, service)
);
