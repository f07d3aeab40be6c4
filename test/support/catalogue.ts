/**
 * Helpers of the catalogue's contract suites (profiles, photos, listings): pets to hang a profile or photos
 * on, the `pet.profile_updated` events a write appended, idempotency inputs, and rows counted straight in
 * the tables (what a repository's own reads could hide).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Database } from '../../src/db/database.js';
import type { IdempotencyInput } from '../../src/db/idempotency/records.js';
import { accountRepository } from '../../src/modules/accounts/repository.js';
import { eventRepository } from '../../src/modules/events/index.js';
import type { NewPhoto } from '../../src/modules/photos/repository.js';
import { PHOTO_SIZES, type PhotoRecord, type PhotoSize } from '../../src/modules/photos/schemas.js';
import { petRepository } from '../../src/modules/pets/repository.js';
import type { PetStatus } from '../../src/modules/pets/schemas.js';
import { DAY, T0 } from './contract.js';
import { createdPet } from './pets.js';
import { rawQuery } from './raw-sql.js';

/** A new pet's id. */
export async function newPet(
  database: Database,
  name = 'Catalogued',
  categoryId = 1,
  status: PetStatus = 'available',
): Promise<number> {
  return createdPet(await database.repository(petRepository).create({ name, categoryId, status })).id;
}

export async function deletePet(database: Database, id: number, now = T0): Promise<void> {
  const result = await database.repository(petRepository).delete(id, undefined, undefined, now);
  assert.deepEqual(result, { kind: 'deleted' });
}

export interface ProfileEvent {
  id: string;
  type: 'pet.profile_updated';
  timestamp: string;
  data: {
    object: { id: number; profile: Record<string, unknown> };
    previous: Record<string, unknown>;
    version: number;
  };
}

/** The `pet.profile_updated` events in the feed's order, of one pet or of all. */
export async function profileEvents(database: Database, petId?: number): Promise<ProfileEvent[]> {
  const events = database.repository(eventRepository);
  await events.publish();
  const all: ProfileEvent[] = [];
  let afterSeq: number | undefined;
  for (;;) {
    const page = await events.list({
      afterSeq,
      type: 'pet.profile_updated',
      limit: 100,
      viewer: { accountId: 0, allOrders: true },
    });
    all.push(...page.map((row) => JSON.parse(row.payload) as ProfileEvent));
    if (page.length < 100) break;
    afterSeq = page.at(-1)!.seq;
  }
  return petId === undefined ? all : all.filter((event) => event.data.object.id === petId);
}

/** An idempotency input of `operation` by the suite's account, records kept for a day. */
export async function idempotencyInput(
  database: Database,
  operation: string,
  key: string,
  fingerprint: string,
  now = T0,
): Promise<IdempotencyInput> {
  const account = await database.repository(accountRepository).upsertAccount({ name: 'catalogue' }, T0);
  return { accountId: account.id, operation, key, fingerprint, now, notBefore: now - DAY };
}

/** How many rows of `table` have `column` = `value`, counted in the table itself. */
export async function countRows(
  database: Database,
  table: 'pet_profiles' | 'pet_photos' | 'pet_photo_files' | 'listing_words',
  column: 'pet_id' | 'photo_id' | 'id',
  value: number | string,
): Promise<number> {
  const [row] = await rawQuery<{ n: number | string }>(
    database,
    `SELECT count(*) AS n FROM ${table} WHERE ${column} = ?`,
    [value],
  );
  return Number(row!.n);
}

/** The bytes stored for one rendering (or the original) of a photo: told apart by photo and size. */
export const photoBytes = (id: string, size: string): Buffer => Buffer.from(`${size} of ${id}`);

/** A photo to add to `petId` (the repository stores bytes as given: they need not be an image). */
export function newPhoto(petId: number, extra: Partial<NewPhoto> = {}): NewPhoto {
  const id = extra.id ?? randomBytes(16).toString('base64url');
  return {
    id,
    petId,
    width: 800,
    height: 600,
    original: photoBytes(id, 'original'),
    files: Object.fromEntries(PHOTO_SIZES.map((size) => [size, photoBytes(id, size)])) as Record<
      PhotoSize,
      Buffer
    >,
    now: T0,
    max: 20,
    ...extra,
  };
}

export function added(result: unknown): PhotoRecord {
  const outcome = result as { kind: string; photo: PhotoRecord };
  assert.equal(outcome.kind, 'added', `expected added, got ${JSON.stringify(result)}`);
  return outcome.photo;
}
