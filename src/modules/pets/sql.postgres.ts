/** The pets' hot-path statements on PostgreSQL. */
import { appendingEvents } from '../events/index.js';
import { PET_COLUMNS } from './batched-writes.postgres.js';

/**
 * Hot-path statements, prepared once per connection under a fixed name (pg keeps the name → text map per
 * connection, and PostgreSQL re-plans them itself after DDL).
 */
export const SQL = {
  // Every page asked for in one event-loop turn, in one statement: one keyset query per (status, after,
  // limit) tuple. Only one branch runs per tuple (the other's one-time filter is false). The row comparison
  // makes the status branch an index condition on (status, id), so a page costs the same at any depth
  // whatever the status's frequency; with `status = … AND id > …` alone the generic plan scans the primary
  // key and filters.
  listPages: `SELECT q.i, p.id, p.name, p.category_id AS "categoryId", p.status
    FROM unnest($1::text[], $2::bigint[], $3::int[]) WITH ORDINALITY AS q(status, after_id, lim, i)
    CROSS JOIN LATERAL (
      (SELECT id, name, category_id, status FROM pets
        WHERE q.status IS NULL AND id > q.after_id ORDER BY id LIMIT q.lim)
      UNION ALL
      (SELECT id, name, category_id, status FROM pets
        WHERE q.status IS NOT NULL AND status = q.status AND (status, id) > (q.status, q.after_id)
        ORDER BY status, id LIMIT q.lim)
    ) p
    ORDER BY q.i, p.id`,
  getPet: `SELECT ${PET_COLUMNS}, version FROM pets WHERE id = $1`,
  // The row lock serialises writers of one pet (PATCH, DELETE, order transitions) for the transaction, so
  // the version, the holds (petHolds: an open order) and the write below see one state.
  lockPet: `SELECT ${PET_COLUMNS}, version FROM pets WHERE id = $1 FOR UPDATE`,
  categoryExists: 'SELECT 1 FROM categories WHERE id = $1',
  // The row as decided (decisions.ts); the version in WHERE makes the write conditional.
  updatePet:
    'UPDATE pets SET name = $1, category_id = $2, status = $3, version = $4 WHERE id = $5 AND version = $6',
  deletePet: 'DELETE FROM pets WHERE id = $1 AND version = $2',
  // Conditional insert instead of relying on the FK: an unknown category is a routine client mistake and
  // should not abort a transaction or fill the server log with errors.
  insertPet: `INSERT INTO pets (name, category_id, status, created_at)
    SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM categories WHERE id = $2)
    RETURNING ${PET_COLUMNS}`,
  // Ids for the creations of one turn, drawn ahead so their events can be built before insertPetsWithEvents.
  reservePetIds: `SELECT nextval(pg_get_serial_sequence('pets', 'id')) AS id FROM generate_series(1, $1::int)`,
  // insertPet for the creations of one turn, with their events, in one statement (no transaction of ours: a
  // statement is atomic). $1 holds the reserved ids, $6 on the events (one per input, appendingEvents); `n`
  // says which input each written row is: inputs naming an unknown category write nothing, nor their event.
  insertPetsWithEvents: `WITH input AS (
      SELECT e.n, e.id, e.name, e.category_id, e.status, e.created_at
      FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::bigint[])
        WITH ORDINALITY AS e(id, name, category_id, status, created_at, n)
      WHERE EXISTS (SELECT 1 FROM categories c WHERE c.id = e.category_id)
    ), inserted AS (
      INSERT INTO pets (id, name, category_id, status, created_at) OVERRIDING SYSTEM VALUE
      SELECT id, name, category_id, status, created_at FROM input ORDER BY n
      RETURNING id
    ), written AS (
      SELECT input.n FROM input JOIN inserted USING (id)
    ), appended AS (
      ${appendingEvents(6, 'written')}
    )
    SELECT input.n, ${PET_COLUMNS} FROM input JOIN inserted USING (id)`,
} as const;
