-- Same tables, columns and indexes as the SQLite backend; timestamps are epoch ms (bigint) because the
-- caller's clock supplies them, not the database's.
CREATE TABLE categories (id bigint PRIMARY KEY, name text NOT NULL UNIQUE);
CREATE TABLE pets (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name text NOT NULL,
  category_id bigint NOT NULL REFERENCES categories(id),
  status text NOT NULL CHECK (status IN ('available', 'pending', 'sold')),
  created_at bigint NOT NULL
);
CREATE INDEX pets_status_id ON pets (status, id);
CREATE TABLE accounts (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name text NOT NULL UNIQUE,
  plan text NOT NULL CHECK (plan IN ('free', 'pro', 'business', 'enterprise')),
  per_minute bigint NOT NULL,
  per_day bigint NOT NULL,
  ban_lifted_at bigint,
  created_at bigint NOT NULL
);
CREATE TABLE api_keys (
  id text PRIMARY KEY,
  account_id bigint NOT NULL REFERENCES accounts(id),
  hash text NOT NULL UNIQUE,
  hint text NOT NULL,
  created_at bigint NOT NULL,
  expires_at bigint,
  revoked_at bigint
);
CREATE INDEX api_keys_account ON api_keys (account_id);
CREATE TABLE idempotency_keys (
  account_id bigint NOT NULL REFERENCES accounts(id),
  key text NOT NULL,
  fingerprint text NOT NULL,
  status integer NOT NULL,
  -- text, not jsonb: a replay must return the first response byte for byte (jsonb reorders keys).
  body text NOT NULL,
  created_at bigint NOT NULL,
  PRIMARY KEY (account_id, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
-- The default categories (DEFAULT_CATEGORIES in src/modules/categories/repository.ts).
INSERT INTO categories (id, name) VALUES
  (1, 'dogs'), (2, 'cats'), (3, 'birds'), (4, 'rabbits'), (5, 'small mammals'), (6, 'reptiles'), (7, 'fish');
