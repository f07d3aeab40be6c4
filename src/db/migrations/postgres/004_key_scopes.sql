-- Scopes per key (DESIGN 4.1): a space-separated list of scope names, as in OAuth. NULL means every scope,
-- present and future: the keys that existed before scopes keep every scope, and so does a key created
-- without --scopes.
ALTER TABLE api_keys ADD COLUMN scopes TEXT;
