-- createPet without Idempotency-Key (pets/repository.postgres.ts create; events append with its lock).
BEGIN;
INSERT INTO pets (name, category_id, status, created_at)
  SELECT 'Rex', 1, 'available', 1 WHERE EXISTS (SELECT 1 FROM categories WHERE id = 1)
  RETURNING id, name, category_id AS "categoryId", status;
WITH lock AS (SELECT pg_advisory_xact_lock(hashtextextended('["pet-adoption","events"]', 0)))
  INSERT INTO events (id, type, account_id, payload, created_at)
  SELECT 'evt_' || md5(random()::text), 'pet.created', NULL, '{"object":{}}', 1 FROM lock;
COMMIT;
