-- createPet without Idempotency-Key (pets/repository.postgres.ts create; events append).
BEGIN;
INSERT INTO pets (name, category_id, status, created_at)
  SELECT 'Rex', 1, 'available', 1 WHERE EXISTS (SELECT 1 FROM categories WHERE id = 1)
  RETURNING id, name, category_id AS "categoryId", status;
INSERT INTO events (id, type, account_id, payload, created_at)
  VALUES ('evt_' || md5(random()::text), 'pet.created', NULL, '{"object":{}}', 1);
COMMIT;
