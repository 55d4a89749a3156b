-- 0002: bind a login flow to the browser that opened its one-time link.
-- The viewer's session secret is stored only as a hash; a second browser never matches it.
ALTER TABLE login_sessions ADD COLUMN viewer_hash TEXT;
