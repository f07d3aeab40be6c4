/** `pet-adoption seed`'s demo pets on PostgreSQL: bulk inserts, no events (as on SQLite). */
import type { PostgresDatabase } from '../../db/postgres.js';
import { demoPet } from './demo.js';

/** Rows per statement when seeding: large enough to amortise round trips, small enough for one message. */
const SEED_CHUNK = 50_000;

export async function seedPets(
  db: PostgresDatabase,
  count: number,
  now: number,
  onProgress?: (done: number) => void,
): Promise<number> {
  if (count <= 0) return 0;
  return db.withAdminClient(async (client) => {
    // Serialise seeders so concurrent runs do not reuse the same numbers.
    await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [db.lockKey('seed')]);
    const [row] = (await client.query<{ n: number }>('SELECT count(*) AS n FROM pets')).rows;
    const start = row?.n ?? 0;
    // Rows are built with demoPet so every backend numbers and names demo pets identically; unnest turns
    // the three arrays into rows, one statement per chunk. One transaction: all or nothing.
    for (let offset = 0; offset < count; offset += SEED_CHUNK) {
      const size = Math.min(SEED_CHUNK, count - offset);
      const names: string[] = new Array<string>(size);
      const categories: number[] = new Array<number>(size);
      const statuses: string[] = new Array<string>(size);
      for (let j = 0; j < size; j++) {
        const p = demoPet(start + offset + j);
        names[j] = p.name;
        categories[j] = p.categoryId;
        statuses[j] = p.status;
      }
      await client.query(
        `INSERT INTO pets (name, category_id, status, created_at)
           SELECT n, c, s, $4 FROM unnest($1::text[], $2::bigint[], $3::text[]) AS t(n, c, s)`,
        [names, categories, statuses, now],
      );
      onProgress?.(offset + size);
    }
    return count;
  });
}
