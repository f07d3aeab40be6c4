import type { RepositoryFactory } from '../../db/database.js';
import type { IdempotencyInput } from '../../db/idempotency/records.js';
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

/** A pet with its version (incremented by every change; its strong ETag is `"<version>"`). */
export interface VersionedPet {
  pet: Pet;
  version: number;
}

/** The precondition of a write (If-Match): a test of the current version, run inside the write. */
export type VersionTest = (version: number) => boolean;

export interface PetChange {
  name?: string;
  categoryId?: number;
  status?: PetStatus;
}

/** Refusals common to changing and deleting a pet. */
type WriteRefusal =
  | { kind: 'not_found' }
  | { kind: 'precondition_failed'; version: number }
  | { kind: 'open_order' }
  | { kind: 'idempotency_mismatch' }
  | { kind: 'idempotency_in_progress' };

export type UpdatePetResult =
  | { kind: 'updated'; pet: Pet; version: number }
  | { kind: 'replayed'; status: number; pet: Pet; version: number }
  | { kind: 'unknown_category' }
  | WriteRefusal;

export type DeletePetResult = { kind: 'deleted' } | { kind: 'replayed'; status: number } | WriteRefusal;

/** What an idempotent updatePet records: the pet and the version its ETag named. */
export interface RecordedUpdate {
  pet: Pet;
  version: number;
}

/**
 * The pets repository, implemented once per backend; test/contracts/pets.contract.test.ts holds every
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
 * - `update` and `delete` check, in one transaction with the write: the pet exists (`not_found`), the
 *   precondition holds for its current version (`precondition_failed` with that version), the category
 *   exists (`unknown_category`), and neither a status change nor a deletion happens while the pet is held
 *   (`open_order`: a hold registered on petHolds says so; the orders module holds the pets of its open
 *   orders), in that order, as decisions.ts decides for every backend. The write itself is conditional on
 *   the version read (`… WHERE id = ? AND version = ?`). An update increments the version. Idempotency as
 *   for `create`.
 * - Every change appends its event (pet.created, pet.updated with the changed fields' old values,
 *   pet.deleted with the pet as it was) in the same transaction, stamped `now` (the caller's clock; the
 *   system clock when omitted); a refused or failed write appends none, a replay none either.
 * - Errors reaching the database reject with `StorageUnavailableError`.
 */
export interface PetRepository {
  list(query: ListPetsQuery): Promise<Pet[]>;
  /**
   * The version of the pets as this instance last saw them, for the exact page cache (http/page-cache.ts):
   * it changes whenever any instance or process has committed a change to pets since, and it is at least as
   * new as every change committed before the current request arrived. Undefined when not known (the cache is
   * then bypassed). Free: both backends return what the request's key lookup read (no statement of its own).
   */
  readVersion(): string | undefined;
  get(id: number): Promise<VersionedPet | undefined>;
  create(pet: NewPetRecord, idempotency?: IdempotencyInput, now?: number): Promise<CreatePetResult>;
  update(
    id: number,
    change: PetChange,
    precondition?: VersionTest,
    idempotency?: IdempotencyInput,
    now?: number,
  ): Promise<UpdatePetResult>;
  delete(
    id: number,
    precondition?: VersionTest,
    idempotency?: IdempotencyInput,
    now?: number,
  ): Promise<DeletePetResult>;
  /**
   * Insert many demo pets at once (the CLI's seed, benchmarks); returns how many were inserted.
   * `onProgress` hears how many are written so far, after each chunk.
   */
  seed(count: number, now: number, onProgress?: (done: number) => void): Promise<number>;
}

export const petRepository: RepositoryFactory<PetRepository> = {
  sqlite: (db) => new SqlitePetRepository(db),
  postgres: (db) => new PostgresPetRepository(db),
};
