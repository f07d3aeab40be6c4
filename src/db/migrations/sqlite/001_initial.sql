CREATE TABLE categories (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE pets (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  category_id INTEGER NOT NULL REFERENCES categories(id),
  status TEXT NOT NULL CHECK (status IN ('available', 'pending', 'sold')),
  created_at INTEGER NOT NULL
);
CREATE INDEX pets_status_id ON pets (status, id);
CREATE TABLE accounts (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL UNIQUE,
  plan TEXT NOT NULL CHECK (plan IN ('free', 'pro', 'business', 'enterprise')),
  per_minute INTEGER NOT NULL,
  per_day INTEGER NOT NULL,
  ban_lifted_at INTEGER,
  created_at INTEGER NOT NULL
);
CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  account_id INTEGER NOT NULL REFERENCES accounts(id),
  hash TEXT NOT NULL UNIQUE,
  hint TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER,
  revoked_at INTEGER
);
CREATE INDEX api_keys_account ON api_keys (account_id);
CREATE TABLE idempotency_keys (
  account_id INTEGER NOT NULL REFERENCES accounts(id),
  key TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  status INTEGER NOT NULL,
  body TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (account_id, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
-- The default categories (DEFAULT_CATEGORIES in src/modules/categories/repository.ts).
INSERT INTO categories (id, name) VALUES
  (1, 'dogs'), (2, 'cats'), (3, 'birds'), (4, 'rabbits'), (5, 'small mammals'), (6, 'reptiles'), (7, 'fish');
