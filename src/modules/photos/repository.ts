import type { RepositoryFactory } from '../../db/database.js';
import type { IdempotencyInput, IdempotencyRefusal, Replayed } from '../../db/idempotency/records.js';
import { PostgresPhotoRepository } from './repository.postgres.js';
import { SqlitePhotoRepository } from './repository.sqlite.js';
import type { PhotoRecord, PhotoSize } from './schemas.js';

export type PhotoWrite<T> = T | Replayed | IdempotencyRefusal;

export type AddOutcome = { kind: 'added'; photo: PhotoRecord } | { kind: 'not_found' } | { kind: 'limit' };
export type ChangeOutcome =
  { kind: 'done'; photo: PhotoRecord } | { kind: 'not_found' } | { kind: 'bad_position'; count: number };

export interface NewPhoto {
  id: string;
  petId: number;
  width: number;
  height: number;
  /** The upload as sent (kept, never served) and the renderings. */
  original: Buffer;
  files: Record<PhotoSize, Buffer>;
  now: number;
  max: number;
}

/**
 * A pet's photos, implemented once per backend; test/photos.test.ts holds both to this contract through
 * the API:
 * - Positions of a pet's photos are 0..n-1 without gaps, in the order `list` returns them.
 * - `add` is one transaction, serialised per pet: the pet must exist and hold fewer than `max` photos; the
 *   photo goes last, with its files. `remove` closes the gap it leaves; `move` shifts the photos between
 *   the old and the new position. With an idempotency input, the answer is recorded with the write.
 * - `list` is undefined for an unknown pet. `file` returns the bytes of one rendering (or of the original).
 * - Deleting a pet deletes its photos and their files (foreign keys, ON DELETE CASCADE).
 */
export interface PhotoRepository {
  count(petId: number): Promise<number | undefined>;
  add(photo: NewPhoto, idempotency?: IdempotencyInput): Promise<PhotoWrite<AddOutcome>>;
  list(petId: number): Promise<PhotoRecord[] | undefined>;
  remove(petId: number, photoId: string, idempotency?: IdempotencyInput): Promise<PhotoWrite<ChangeOutcome>>;
  move(
    petId: number,
    photoId: string,
    position: number,
    idempotency?: IdempotencyInput,
  ): Promise<PhotoWrite<ChangeOutcome>>;
  file(photoId: string, size: PhotoSize): Promise<Buffer | undefined>;
  /** Whether the photo is still there (a conditional request's 304 needs no bytes). */
  exists(photoId: string): Promise<boolean>;
}

export const photoRepository: RepositoryFactory<PhotoRepository> = {
  sqlite: (db) => new SqlitePhotoRepository(db),
  postgres: (db) => new PostgresPhotoRepository(db),
};
