import type { RepositoryFactory } from '../../db/database.js';
import type { IdempotencyInput, IdempotencyRefusal, Replayed } from '../../db/idempotency/records.js';
import { PostgresProfileRepository } from './repository.postgres.js';
import { SqliteProfileRepository } from './repository.sqlite.js';
import type { PetProfile } from './schemas.js';

/** A profile as stored: the document (no `updatedAt`), its version (0: none yet) and when it changed. */
export type ProfileDoc = Omit<PetProfile, 'updatedAt'>;
export interface ProfileRecord {
  doc: ProfileDoc;
  version: number;
  updatedAt: number | null;
}

/** Makes the new document from the stored one, or says which field makes the result invalid. */
export type ProfileChange = (current: ProfileDoc) => ProfileDoc | { invalid: string; message: string };

export type ProfileWriteResult =
  | { kind: 'done'; record: ProfileRecord }
  | { kind: 'not_found' }
  | { kind: 'precondition_failed'; version: number }
  | { kind: 'invalid'; field: string; message: string }
  | Replayed<ProfileRecord>
  | IdempotencyRefusal;

export interface ProfileWrite {
  petId: number;
  change: ProfileChange;
  /** If-Match, tested against the profile's current version inside the transaction. */
  ifMatch?: (version: number) => boolean;
  now: number;
}

/**
 * A pet's profile, implemented once per backend; test/contracts/profiles.contract.test.ts holds both to
 * this contract directly, test/profiles.test.ts through the API:
 * - `get` answers undefined for an unknown pet, and version 0 with `{}` for a pet without a profile.
 * - `write` is one transaction: the pet must exist, `ifMatch` is checked on the locked row, the document
 *   replaces the stored one (version + 1, `updated_at` = now), the search columns follow it, and a
 *   `pet.profile_updated` event is appended; with an idempotency input, its answer is recorded alongside.
 * - Deleting a pet deletes its profile (foreign key, ON DELETE CASCADE).
 */
export interface ProfileRepository {
  get(petId: number): Promise<ProfileRecord | undefined>;
  write(input: ProfileWrite, idempotency?: IdempotencyInput): Promise<ProfileWriteResult>;
  /**
   * Demo data (the CLI's seed, benchmarks): first profiles of many pets at once (version 1, `updatedAt` =
   * `now`), without events. A pet that already has a profile keeps it, on every backend: re-running
   * `pet-adoption seed` must not overwrite a profile someone edited, nor reset its version to 1 without an
   * event (a client's old ETag would then match a different document, and the feed would miss the change).
   */
  seed(profiles: { petId: number; doc: ProfileDoc }[], now: number): Promise<void>;
}

export const profileRepository: RepositoryFactory<ProfileRepository> = {
  sqlite: (db) => new SqliteProfileRepository(db),
  postgres: (db) => new PostgresProfileRepository(db),
};
