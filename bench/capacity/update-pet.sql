-- updatePet (PATCH name) without Idempotency-Key: lock, update, event, commit.
\set id random(1, 10000)
BEGIN;
SELECT id, name, category_id AS "categoryId", status, version FROM pets WHERE id = :id FOR UPDATE;
UPDATE pets SET name = COALESCE('Renamed', name), category_id = COALESCE(NULL, category_id),
    status = COALESCE(NULL, status), version = version + 1
  WHERE id = :id RETURNING id, name, category_id AS "categoryId", status, version;
INSERT INTO events (id, type, account_id, payload, created_at)
  VALUES ('evt_' || md5(random()::text), 'pet.updated', NULL, '{"object":{}}', 1);
COMMIT;
