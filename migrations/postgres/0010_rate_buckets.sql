-- Call-rate token buckets shared by every replica (item 9 of issue 20): one row per user
-- (u:<team>:<user>) and per team (t:<team>). An absent row is a full bucket, so rows that have
-- refilled completely are deleted by the sweep without changing any decision.
CREATE TABLE rate_buckets (
  key TEXT PRIMARY KEY,
  tokens DOUBLE PRECISION NOT NULL,
  updated_at BIGINT NOT NULL,
  -- Whether the last take was granted: what the atomic upsert reports back.
  granted BOOLEAN NOT NULL
);
CREATE INDEX rate_buckets_updated_at ON rate_buckets (updated_at);
