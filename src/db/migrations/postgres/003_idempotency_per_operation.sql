-- Idempotency keys are remembered per account, operation and key, so every write route can use them.
-- Existing records were createPet's.
ALTER TABLE idempotency_keys ADD COLUMN operation text NOT NULL DEFAULT 'createPet';
ALTER TABLE idempotency_keys ALTER COLUMN operation DROP DEFAULT;
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey;
ALTER TABLE idempotency_keys ADD PRIMARY KEY (account_id, operation, key);
