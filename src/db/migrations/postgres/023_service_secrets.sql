-- Secrets every instance on this database shares, made once by the first instance that needs one (a random
-- 32 bytes from node:crypto, hex): `cursor` authenticates list cursors unless CURSOR_SECRET is set.
CREATE TABLE service_secrets (
  name TEXT PRIMARY KEY,
  secret TEXT NOT NULL,
  created_at BIGINT NOT NULL
);
