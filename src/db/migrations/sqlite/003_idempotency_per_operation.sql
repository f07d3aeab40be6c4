-- Idempotency keys are remembered per account, operation and key, so every write route can use them.
-- SQLite cannot change a primary key in place: rebuild the table. Existing records were createPet's.
CREATE TABLE idempotency_keys_new (
  account_id INTEGER NOT NULL REFERENCES accounts(id),
  operation TEXT NOT NULL,
  key TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  status INTEGER NOT NULL,
  body TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (account_id, operation, key)
);
INSERT INTO idempotency_keys_new (account_id, operation, key, fingerprint, status, body, created_at)
  SELECT account_id, 'createPet', key, fingerprint, status, body, created_at FROM idempotency_keys;
DROP TABLE idempotency_keys;
ALTER TABLE idempotency_keys_new RENAME TO idempotency_keys;
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
