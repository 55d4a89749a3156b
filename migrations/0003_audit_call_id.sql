-- 0003: write-ahead audit. A call's `call_started` row is written before the vendor runs and its
-- `call` row when it completes; both carry the same call_id, so a started call without a completion
-- row (the broker died, or the completion row could not be written) is visible.
ALTER TABLE audit ADD COLUMN call_id TEXT;
CREATE INDEX audit_by_call ON audit (call_id) WHERE call_id IS NOT NULL;
