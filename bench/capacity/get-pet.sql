-- getPet (pets/repository.postgres.ts).
\set id random(1, 10000)
SELECT id, name, category_id AS "categoryId", status, version FROM pets WHERE id = :id;
