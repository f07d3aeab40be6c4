import type { PoolClient } from 'pg';
import type { PostgresDatabase } from '../../db/postgres.js';
import { TurnBatch, type Settled } from '../../db/turn-batch.js';
import type { IdempotencyInput } from '../../http/idempotency/index.js';
import { idempotencyRepository } from '../../http/idempotency/repository.js';
import type { PostgresIdempotency } from '../../http/idempotency/repository.postgres.js';
import {
  demoPet,
  type CreatePetResult,
  type ListPetsQuery,
  type NewPetRecord,
  type PetRepository,
} from './repository.js';
import type { Pet } from './schemas.js';

/** Rows per statement when seeding: large enough to amortise round trips, small enough for one message. */
const SEED_CHUNK = 50_000;

// Rows are selected with column aliases that make them the domain shape as it is.
const PET_COLUMNS = 'id, name, category_id AS "categoryId", status';

/**
 * Hot-path statements, prepared once per connection under a fixed name (pg keeps the name → text map per
 * connection, and PostgreSQL re-plans them itself after DDL).
 */
const SQL = {
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
  getPet: `SELECT ${PET_COLUMNS} FROM pets WHERE id = $1`,
  // Conditional insert instead of relying on the FK: an unknown category is a routine client mistake and
  // should not abort a transaction or fill the server log with errors.
  insertPet: `INSERT INTO pets (name, category_id, status, created_at)
    SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM categories WHERE id = $2)
    RETURNING ${PET_COLUMNS}`,
} as const;

/** Test seams for fault injection; empty in production. */
export interface PostgresPetHooks {
  /** Runs inside the idempotent creation's transaction, right after the pet row is inserted. */
  afterInsert?: (client: PoolClient) => void | Promise<void>;
}

export class PostgresPetRepository implements PetRepository {
  readonly hooks: PostgresPetHooks = {};
  private readonly pages = new TurnBatch((queries: ListPetsQuery[]) => this.listPages(queries));
  private readonly idempotency: PostgresIdempotency;

  constructor(private readonly db: PostgresDatabase) {
    this.idempotency = db.repository(idempotencyRepository) as PostgresIdempotency;
  }

  /** The pages asked for in one event-loop turn come from one query (TurnBatch), like key lookups. */
  list(query: ListPetsQuery): Promise<Pet[]> {
    return this.pages.add(query);
  }

  private async listPages(queries: ListPetsQuery[]): Promise<Settled<Pet[]>[]> {
    const rows = await this.db.query<Pet & { i: number }>({
      name: 'pets_list_pages',
      text: SQL.listPages,
      values: [
        queries.map((q) => q.status ?? null),
        queries.map((q) => q.afterId ?? 0),
        queries.map((q) => q.limit),
      ],
    });
    const pages = queries.map((): Pet[] => []);
    for (const { i, ...pet } of rows) pages[i - 1]!.push(pet);
    return pages.map((value) => ({ value }));
  }

  async get(id: number): Promise<Pet | undefined> {
    const [pet] = await this.db.query<Pet>({ name: 'pets_get', text: SQL.getPet, values: [id] });
    return pet;
  }

  async create(pet: NewPetRecord, idem?: IdempotencyInput): Promise<CreatePetResult> {
    const now = idem?.now ?? Date.now();
    const values = [pet.name, pet.categoryId, pet.status, now];
    try {
      if (!idem) {
        // One statement is its own transaction: no need to hold a connection across round trips.
        const [created] = await this.db.query<Pet>({ name: 'pets_insert', text: SQL.insertPet, values });
        return created ? { kind: 'created', pet: created } : { kind: 'unknown_category' };
      }
      const outcome = await this.db.transaction((client) =>
        this.idempotency.run(
          client,
          idem,
          async (): Promise<CreatePetResult> => {
            const inserted = await client.query<Pet>({ name: 'pets_insert', text: SQL.insertPet, values });
            const created = inserted.rows[0];
            if (!created) return { kind: 'unknown_category' };
            await this.hooks.afterInsert?.(client);
            return { kind: 'created', pet: created };
          },
          (result) => (result.kind === 'created' ? { status: 201, body: result.pet } : undefined),
        ),
      );
      switch (outcome.kind) {
        case 'done':
          return outcome.value;
        case 'replayed':
          return { kind: 'replayed', status: outcome.status, body: outcome.body as Pet };
        case 'mismatch':
          return { kind: 'idempotency_mismatch' };
        case 'in_progress':
          return { kind: 'idempotency_in_progress' };
      }
    } catch (error) {
      // The EXISTS check cannot see a category deleted concurrently; the foreign key still can.
      const { code, constraint } = (error ?? {}) as { code?: unknown; constraint?: unknown };
      if (code === '23503' && constraint === 'pets_category_id_fkey') return { kind: 'unknown_category' };
      throw error;
    }
  }

  async seed(count: number, now: number): Promise<number> {
    if (count <= 0) return 0;
    return this.db.withAdminClient(async (client) => {
      // Serialise seeders so concurrent runs do not reuse the same numbers.
      await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [this.db.lockKey('seed')]);
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
      }
      return count;
    });
  }
}
