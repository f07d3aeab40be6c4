-- listPets when its page is not cached (pets/repository.postgres.ts listPages), one page of 21 rows.
SELECT q.i, p.id, p.name, p.category_id AS "categoryId", p.status
  FROM unnest(ARRAY[NULL]::text[], ARRAY[0]::bigint[], ARRAY[21]::int[]) WITH ORDINALITY AS q(status, after_id, lim, i)
  CROSS JOIN LATERAL (
    (SELECT id, name, category_id, status FROM pets
      WHERE q.status IS NULL AND id > q.after_id ORDER BY id LIMIT q.lim)
    UNION ALL
    (SELECT id, name, category_id, status FROM pets
      WHERE q.status IS NOT NULL AND status = q.status AND (status, id) > (q.status, q.after_id)
      ORDER BY status, id LIMIT q.lim)
  ) p
  ORDER BY q.i, p.id;
