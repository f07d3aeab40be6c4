/**
 * `pet-adoption seed` run twice, on every backend, with the same outcome on each: the second run adds as
 * many pets again and leaves what the first made (and what a user changed since) as it is. The catalogue's
 * share run again over pets that already have a profile keeps every profile: not overwritten, its version
 * not reset, no event (the seed writes first profiles only; SQLite once overwrote them, PostgreSQL did not).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Database } from '../src/db/database.js';
import { MODULES } from '../src/modules/index.js';
import { listingRepository } from '../src/modules/listings/repository.js';
import { seedCatalogue } from '../src/modules/listings/seed.js';
import { petRepository } from '../src/modules/pets/repository.js';
import { photoRepository } from '../src/modules/photos/repository.js';
import { profileRepository, type ProfileDoc } from '../src/modules/profiles/repository.js';
import { backends } from './helpers.js';
import { profileEvents } from './support/catalogue.js';

const T1 = Date.UTC(2026, 5, 15, 12, 0, 0);
const T2 = T1 + 24 * 3600_000;
/** Half the demo pets are available: the applications' share finds its six among each run's own. */
const COUNT = 12;
const EDIT: ProfileDoc = { breed: 'Edited by hand', size: 'xlarge' };

/** Every pet as the API would show it: the pet, its profile with version and time, how many photos. */
async function catalogue(database: Database) {
  const rows = await database.repository(listingRepository).search({
    status: ['available', 'pending', 'sold'],
    booleans: {},
    sort: 'oldest',
    limit: 1000,
    filters: {},
  });
  return Promise.all(
    rows.map(async ({ id, name, categoryId, status }) => ({
      id,
      name,
      categoryId,
      status,
      profile: await database.repository(profileRepository).get(id),
      photos: await database.repository(photoRepository).count(id),
    })),
  );
}

/** Every module's share of `pet-adoption seed --pets COUNT`, in the command's order. */
async function seed(database: Database, now: number): Promise<void> {
  for (const module of MODULES) {
    await module.seed?.run({ database, count: COUNT, now, onProgress: () => {} });
  }
}

type Outcome = { whole: unknown; catalogue: unknown };
const outcomes = new Map<string, Outcome>();

for (const backend of await backends()) {
  describe(`seed run twice [${backend.name}]`, () => {
    let database: Database;
    const outcome: Partial<Outcome> = {};
    before(async () => {
      database = await backend.createDatabase();
      await database.migrate();
    });
    after(async () => {
      await database.close();
      if (outcome.whole && outcome.catalogue) outcomes.set(backend.name, outcome as Outcome);
    });

    test('the whole seed again: as many pets again, what was there left as it was', async () => {
      await seed(database, T1);
      const first = await catalogue(database);
      assert.equal(first.length, COUNT);
      assert.ok(first.every((pet) => pet.profile?.version === 1 && pet.profile.updatedAt === T1));
      assert.ok(first.some((pet) => pet.photos! > 0));
      const edited = first[0]!.id;
      const write = await database
        .repository(profileRepository)
        .write({ petId: edited, change: () => EDIT, now: T1 + 1 });
      assert.equal(write.kind, 'done');
      const before = await catalogue(database);

      await seed(database, T2);
      const after = await catalogue(database);
      assert.equal(after.length, 2 * COUNT, 'as many again');
      assert.deepEqual(after.slice(0, COUNT), before, 'the first run and the edit as they were');
      assert.deepEqual(after[0]!.profile, { doc: EDIT, version: 2, updatedAt: T1 + 1 });
      const added = after.slice(COUNT);
      assert.ok(added.every((pet) => pet.profile?.version === 1 && pet.profile.updatedAt === T2));
      // What the first run made, for pets numbered on: the statuses the applications left, the photos.
      const shape = (pets: typeof first) => pets.map(({ status, photos }) => ({ status, photos }));
      assert.deepEqual(shape(added), shape(first));
      outcome.whole = after;
    });

    test("the catalogue's share again over the same pets: every profile kept, none reset, no event", async () => {
      const db = await backend.createDatabase();
      try {
        await db.migrate();
        await db.repository(petRepository).seed(COUNT, T1);
        await seedCatalogue(db, COUNT, { withPhotos: 0, now: T1 });
        const first = await catalogue(db);
        assert.ok(first.every((pet) => pet.profile?.version === 1 && pet.profile.updatedAt === T1));
        const edited = first[3]!.id;
        const write = await db
          .repository(profileRepository)
          .write({ petId: edited, change: () => EDIT, now: T1 + 1 });
        assert.equal(write.kind, 'done');
        const before = await catalogue(db);
        const events = (await profileEvents(db)).length;

        await seedCatalogue(db, COUNT, { withPhotos: 0, now: T2 });
        const after = await catalogue(db);
        assert.deepEqual(after, before, 'every profile as it was, the edited one included');
        assert.deepEqual(after[3]!.profile, { doc: EDIT, version: 2, updatedAt: T1 + 1 });
        assert.equal((await profileEvents(db)).length, events, 'no event');
        outcome.catalogue = after;
      } finally {
        await db.close();
      }
    });
  });
}

test('both backends come to the same outcome', (t) => {
  if (outcomes.size < 2) {
    t.skip(`only ${[...outcomes.keys()].join(', ') || 'no backend'} ran to the end`);
    return;
  }
  const [[, sqlite], [, postgres]] = [...outcomes] as [[string, Outcome], [string, Outcome]];
  assert.deepEqual(postgres.catalogue, sqlite.catalogue);
  assert.deepEqual(postgres.whole, sqlite.whole);
});
