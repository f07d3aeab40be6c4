import type { RepositoryFactory } from '../../db/database.js';
import type { IdempotencyInput } from '../../http/idempotency/index.js';
import { DEFAULT_CATEGORIES } from '../categories/repository.js';
import { PostgresPetRepository } from './repository.postgres.js';
import { SqlitePetRepository } from './repository.sqlite.js';
import type { Pet, PetStatus } from './schemas.js';

export interface ListPetsQuery {
  status?: PetStatus;
  /** Keyset position: only pets with a larger id. */
  afterId?: number;
  limit: number;
}

export interface NewPetRecord {
  name: string;
  categoryId: number;
  status: PetStatus;
}

export type CreatePetResult =
  | { kind: 'created'; pet: Pet }
  | { kind: 'replayed'; status: number; body: Pet }
  | { kind: 'unknown_category' }
  | { kind: 'idempotency_mismatch' }
  | { kind: 'idempotency_in_progress' };

/**
 * The pets repository, implemented once per backend; test/modules/pets/repository.test.ts holds every
 * implementation to this contract:
 *
 * - `list` returns pets ordered by id ascending, at most `limit`, filtered by `status`, starting after
 *   `afterId`; its cost is proportional to `limit`, whatever the depth (keyset on (status, id)).
 * - Ids are positive integers below 2^53, assigned in increasing order.
 * - `create` is atomic and durable once it resolves. An unknown category is a result, not an error, and
 *   creates nothing. With an idempotency input it creates at most one pet per (account, operation, key)
 *   within the retention window: a repeat with the same fingerprint returns `replayed` with the first
 *   response, a different fingerprint `idempotency_mismatch`, and a concurrent duplicate
 *   `idempotency_in_progress` (or waits and replays).
 * - Errors reaching the database reject with `StorageUnavailableError`.
 */
export interface PetRepository {
  list(query: ListPetsQuery): Promise<Pet[]>;
  get(id: number): Promise<Pet | undefined>;
  create(pet: NewPetRecord, idempotency?: IdempotencyInput): Promise<CreatePetResult>;
  /** Insert many demo pets at once (the CLI's seed, benchmarks); returns how many were inserted. */
  seed(count: number, now: number): Promise<number>;
}

export const petRepository: RepositoryFactory<PetRepository> = {
  sqlite: (db) => new SqlitePetRepository(db),
  postgres: (db) => new PostgresPetRepository(db),
};

const DEMO_NAMES = ['Rex', 'Luna', 'Milo', 'Bella', 'Coco', 'Max', 'Nala', 'Oscar', 'Kiwi', 'Pepper'];
const PET_STATUS_CYCLE: PetStatus[] = ['available', 'available', 'pending', 'sold'];

/** Deterministic demo pet number i (0-based), shared by every backend's seeding. */
export function demoPet(i: number): NewPetRecord {
  return {
    name: `${DEMO_NAMES[i % DEMO_NAMES.length]} ${i + 1}`,
    categoryId: (i % DEFAULT_CATEGORIES.length) + 1,
    status: PET_STATUS_CYCLE[i % PET_STATUS_CYCLE.length]!,
  };
}
