/**
 * The listings repository contract (src/modules/listings/repository.ts) on every backend, over a small
 * catalogue whose every answer is known: each sort's order with the pet id breaking ties, keyset pages that
 * cover the result exactly once (a page asks for one row past it: how the route knows another exists), each
 * filter (OR within, AND across; a pet without a profile matches no profile filter), words ignoring case and
 * accents, the search near a point (only pets within the radius, their distance as the API computes it), the
 * primary photos, and a deleted pet gone from every answer.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import type { Database } from '../../src/db/database.js';
import { photoRepository } from '../../src/modules/photos/repository.js';
import { profileRepository, type ProfileDoc } from '../../src/modules/profiles/repository.js';
import type { PetStatus } from '../../src/modules/pets/schemas.js';
import { wordsOf, type After, type ListingQuery } from '../../src/modules/listings/query.js';
import { listingRepository, type ListingRow } from '../../src/modules/listings/repository.js';
import { distanceKm } from '../../src/modules/listings/search-sql.js';
import { contractSuite, T0 } from '../support/contract.js';
import { added, deletePet, newPet, newPhoto } from '../support/catalogue.js';

const BERLIN = { latitude: 52.52, longitude: 13.405 };
const ALL: PetStatus[] = ['available', 'pending', 'sold'];

/** The catalogue, in creation (id) order; `n` below is a pet's place here, from 1. */
const PETS: { name: string; categoryId: number; status: PetStatus; doc?: ProfileDoc }[] = [
  {
    name: 'Bella',
    categoryId: 1,
    status: 'available',
    doc: {
      description: 'Calm and gentle.',
      breed: 'Labrador Retriever',
      sex: 'female',
      ageGroup: 'young',
      size: 'medium',
      goodWith: { children: true, dogs: false },
      houseTrained: true,
      location: { latitude: 52.52, longitude: 13.405 },
    },
  },
  {
    name: 'Max',
    categoryId: 1,
    status: 'available',
    doc: {
      description: 'Energetic and clever.',
      breed: 'German Shepherd',
      sex: 'male',
      ageGroup: 'adult',
      size: 'large',
      goodWith: { children: false },
      location: { latitude: 52.39, longitude: 13.065 }, // Potsdam, 27.2 km
    },
  },
  {
    name: 'Luna',
    categoryId: 2,
    status: 'pending',
    doc: {
      description: 'A curious kitten.',
      breed: 'Maine Coon',
      sex: 'female',
      ageGroup: 'baby',
      size: 'small',
      goodWith: { cats: true },
      location: { latitude: 53.551, longitude: 9.994 }, // Hamburg, 255 km
    },
  },
  {
    name: 'Emil',
    categoryId: 2,
    status: 'available',
    doc: {
      description: 'Café au lait coloured.',
      breed: 'Siamese',
      sex: 'male',
      size: 'small',
      location: { latitude: 52.53, longitude: 13.41 }, // 1.2 km
    },
  },
  { name: 'Zoë', categoryId: 3, status: 'sold' },
  { name: 'Ada', categoryId: 1, status: 'available' },
  {
    name: 'Bella',
    categoryId: 4,
    status: 'available',
    doc: { sex: 'female', size: 'small', specialNeeds: true, location: { latitude: 52.6, longitude: 13.5 } },
  },
  {
    name: 'Cleo',
    categoryId: 2,
    status: 'sold',
    doc: {
      sex: 'unknown',
      ageGroup: 'senior',
      houseTrained: false,
      location: { latitude: 48.137, longitude: 11.575 }, // München, 504 km
    },
  },
];

contractSuite('listings', (target) => {
  let s: Database;
  /** The ids of PETS, by place from 1 (ids[0] unused). */
  let ids: number[];
  const at = (...places: number[]) => places.map((n) => ids[n]!);
  before(async () => {
    s = await target.fresh();
    ids = [0];
    for (const pet of PETS) {
      const id = await newPet(s, pet.name, pet.categoryId, pet.status);
      ids.push(id);
      const doc = pet.doc;
      if (doc) {
        const result = await s.repository(profileRepository).write({ petId: id, change: () => doc, now: T0 });
        assert.equal(result.kind, 'done');
      }
    }
    // Photos: two for pet 1, one for pet 3.
    for (const n of [1, 1, 3]) added(await s.repository(photoRepository).add(newPhoto(ids[n]!)));
  });

  const query = (extra: Partial<ListingQuery> = {}): ListingQuery => ({
    status: ALL,
    booleans: {},
    sort: 'newest',
    limit: 100,
    filters: {},
    ...extra,
  });
  const search = (extra: Partial<ListingQuery> = {}) => s.repository(listingRepository).search(query(extra));
  const found = async (extra: Partial<ListingQuery> = {}) => (await search(extra)).map((row) => row.id);

  /** Every row of the query, through keyset pages of `size` as the route walks them. */
  async function walk(extra: Partial<ListingQuery>, size: number): Promise<ListingRow[]> {
    const all: ListingRow[] = [];
    let after: After | undefined;
    for (let pages = 0; pages < 20; pages++) {
      const rows = await search({ ...extra, limit: size, after });
      assert.ok(rows.length <= size + 1, `at most one row past the page (${rows.length})`);
      const page = rows.slice(0, size);
      all.push(...page);
      if (rows.length <= size) return all;
      const last = page.at(-1)!;
      after = {
        id: last.id,
        name: last.name,
        distance: last.distance ?? undefined,
        span: extra.sort === 'distance' ? last.distance! - page[0]!.distance! : undefined,
      };
    }
    assert.fail('pages never ended');
  }

  describe('order and pages', () => {
    test('each sort orders by its key, the pet id breaking ties', async () => {
      assert.deepEqual(await found(), at(8, 7, 6, 5, 4, 3, 2, 1));
      assert.deepEqual(await found({ sort: 'oldest' }), at(1, 2, 3, 4, 5, 6, 7, 8));
      // Ada, Bella (1), Bella (7), Cleo, Emil, Luna, Max, Zoë.
      assert.deepEqual(await found({ sort: 'name' }), at(6, 1, 7, 8, 4, 3, 2, 5));
    });

    test('at most limit + 1 rows: the one past the page says another exists', async () => {
      assert.deepEqual(await found({ limit: 2 }), at(8, 7, 6));
      assert.deepEqual(await found({ limit: 7 }), at(8, 7, 6, 5, 4, 3, 2, 1));
      assert.deepEqual(await found({ limit: 8 }), at(8, 7, 6, 5, 4, 3, 2, 1));
    });

    test('keyset pages after `after` cover the result exactly once, in every sort', async () => {
      for (const sort of ['newest', 'oldest', 'name'] as const) {
        const whole = await search({ sort });
        for (const size of [1, 2, 3, 7]) {
          assert.deepEqual(
            (await walk({ sort }, size)).map((row) => row.id),
            whole.map((row) => row.id),
            `${sort} by ${size}`,
          );
        }
      }
      // After the first Bella by name: the second, then the rest; after a pet id alone, newest and oldest.
      assert.deepEqual(
        await found({ sort: 'name', after: { id: ids[1]!, name: 'Bella' } }),
        at(7, 8, 4, 3, 2, 5),
      );
      assert.deepEqual(await found({ after: { id: ids[5]! } }), at(4, 3, 2, 1));
      assert.deepEqual(await found({ sort: 'oldest', after: { id: ids[5]! } }), at(6, 7, 8));
      assert.deepEqual(await found({ status: ['available'], after: { id: ids[5]! } }), at(4, 2, 1));
    });

    test('rows carry the pet, its profile as stored (or none) and no distance without near', async () => {
      const rows = await search({ sort: 'oldest' });
      const [bella, , , , zoe] = rows;
      assert.deepEqual(
        { ...bella!, doc: JSON.parse(bella!.doc!) as unknown },
        {
          id: ids[1],
          name: 'Bella',
          categoryId: 1,
          status: 'available',
          doc: PETS[0]!.doc,
          updatedAt: T0,
          distance: null,
        },
      );
      assert.deepEqual(zoe, {
        id: ids[5],
        name: 'Zoë',
        categoryId: 3,
        status: 'sold',
        doc: null,
        updatedAt: null,
        distance: null,
      });
    });
  });

  describe('filters', () => {
    test('status and category: any of a list, both at once', async () => {
      assert.deepEqual(await found({ status: ['available'] }), at(7, 6, 4, 2, 1));
      assert.deepEqual(await found({ status: ['pending', 'sold'] }), at(8, 5, 3));
      assert.deepEqual(await found({ categoryId: [2] }), at(8, 4, 3));
      assert.deepEqual(await found({ categoryId: [1, 4], status: ['available'] }), at(7, 6, 2, 1));
      assert.deepEqual(await found({ categoryId: [2, 3], status: ['available'] }), at(4));
      assert.deepEqual(await found({ categoryId: [99] }), []);
    });

    test('sex, age group and size: any of a list, with each other and the rest', async () => {
      assert.deepEqual(await found({ sex: ['female'] }), at(7, 3, 1));
      assert.deepEqual(await found({ sex: ['female', 'unknown'] }), at(8, 7, 3, 1));
      assert.deepEqual(await found({ sex: ['female'], size: ['small'] }), at(7, 3));
      assert.deepEqual(await found({ sex: ['female'], size: ['small'], status: ['available'] }), at(7));
      assert.deepEqual(await found({ ageGroup: ['senior', 'baby'] }), at(8, 3));
      assert.deepEqual(await found({ size: ['xlarge'] }), []);
    });

    test('booleans match the stated value only: not an unknown one, nor a pet without a profile', async () => {
      assert.deepEqual(await found({ booleans: { goodWithChildren: true } }), at(1));
      assert.deepEqual(await found({ booleans: { goodWithChildren: false } }), at(2));
      assert.deepEqual(await found({ booleans: { goodWithDogs: false } }), at(1));
      assert.deepEqual(await found({ booleans: { goodWithCats: true } }), at(3));
      assert.deepEqual(await found({ booleans: { goodWithCats: false } }), []);
      assert.deepEqual(await found({ booleans: { houseTrained: true } }), at(1));
      assert.deepEqual(await found({ booleans: { houseTrained: false } }), at(8));
      assert.deepEqual(await found({ booleans: { specialNeeds: true } }), at(7));
      assert.deepEqual(await found({ booleans: { specialNeeds: false } }), []);
      assert.deepEqual(await found({ booleans: { goodWithChildren: true, houseTrained: false } }), []);
    });

    test('hasPhotos: pets with at least one photo, or with none', async () => {
      assert.deepEqual(await found({ hasPhotos: true }), at(3, 1));
      assert.deepEqual(await found({ hasPhotos: false }), at(8, 7, 6, 5, 4, 2));
      assert.deepEqual(await found({ hasPhotos: true, sex: ['female'], status: ['available'] }), at(1));
    });

    test('words: every one in the name, breed or description, ignoring case and accents', async () => {
      const words = async (q: string, extra: Partial<ListingQuery> = {}) =>
        found({ words: wordsOf(q), ...extra });
      assert.deepEqual(await words('CAFE'), at(4), 'é in the description');
      assert.deepEqual(await words('zoe'), at(5), 'ë in the name');
      assert.deepEqual(await words('labrador calm'), at(1));
      assert.deepEqual(await words('labrador energetic'), [], 'every word, not any');
      assert.deepEqual(await words('bella'), at(7, 1));
      assert.deepEqual(await words('bella', { sort: 'name' }), at(1, 7));
      assert.deepEqual(await words('bella', { sort: 'oldest', limit: 1 }), at(1, 7));
      assert.deepEqual(await words('MAINE coon Kitten'), at(3));
      assert.deepEqual(await words('kitten', { status: ['available'] }), []);
      assert.deepEqual(await words('shepherd'), at(2));
      assert.deepEqual(await words('shep'), [], 'whole words');
    });
  });

  describe('near a point', () => {
    const near = (radiusKm: number) => ({ ...BERLIN, radiusKm });
    const expectedKm = (n: number) => {
      const { latitude, longitude } = PETS[n - 1]!.doc!.location! as { latitude: number; longitude: number };
      return distanceKm(BERLIN.latitude, BERLIN.longitude, latitude, longitude);
    };

    test('only pets within the radius, each with its distance in km', async () => {
      const rows = await search({ near: near(50), sort: 'distance' });
      assert.deepEqual(
        rows.map((row) => row.id),
        at(1, 4, 7, 2),
      );
      for (const [i, n] of [1, 4, 7, 2].entries()) {
        assert.ok(Math.abs(rows[i]!.distance! - expectedKm(n)) < 1e-9, `pet ${n}: ${rows[i]!.distance}`);
      }
      assert.deepEqual(await found({ near: near(20), sort: 'distance' }), at(1, 4, 7));
      assert.deepEqual(await found({ near: near(300), sort: 'distance' }), at(1, 4, 7, 2, 3));
      assert.deepEqual(await found({ near: near(1) }), at(1), 'Emil, 1.2 km away, is not within 1 km');
    });

    test('near, sorted otherwise: the same pets in that order, with their distance', async () => {
      const rows = await search({ near: near(50) });
      assert.deepEqual(
        rows.map((row) => row.id),
        at(7, 4, 2, 1),
      );
      assert.ok(rows.every((row) => row.distance !== null));
      assert.deepEqual(await found({ near: near(50), sort: 'name' }), at(1, 7, 4, 2));
      assert.deepEqual(await found({ near: near(50), sex: ['male'] }), at(4, 2));
      assert.deepEqual(await found({ near: near(50), words: wordsOf('cafe') }), at(4));
    });

    test('pages by distance cover the result exactly once', async () => {
      const whole = (await search({ near: near(300), sort: 'distance' })).map((row) => row.id);
      assert.equal(whole.length, 5);
      for (const size of [1, 2, 4]) {
        const walked = await walk({ near: near(300), sort: 'distance' }, size);
        assert.deepEqual(
          walked.map((row) => row.id),
          whole,
          `by ${size}`,
        );
      }
    });
  });

  test('primaryPhotos: the photo at position 0 of each given pet that has one', async () => {
    const photos = s.repository(photoRepository);
    const primary = async (...places: number[]) =>
      (await s.repository(listingRepository).primaryPhotos(at(...places)))
        .map((p) => [p.petId, p.id, p.position])
        .sort((a, b) => Number(a[0]) - Number(b[0]));
    const [first, second] = (await photos.list(ids[1]!))!;
    const [luna] = (await photos.list(ids[3]!))!;
    assert.deepEqual(await primary(1, 3, 5), [
      [ids[1], first!.id, 0],
      [ids[3], luna!.id, 0],
    ]);
    assert.deepEqual(await primary(), []);
    assert.deepEqual(await primary(5, 6), []);
    assert.equal((await photos.move(ids[1]!, second!.id, 0)).kind, 'done');
    assert.deepEqual(await primary(1), [[ids[1], second!.id, 0]]);
    assert.equal((await photos.remove(ids[3]!, luna!.id)).kind, 'done');
    assert.deepEqual(await primary(1, 3), [[ids[1], second!.id, 0]]);
    assert.deepEqual(await found({ hasPhotos: true }), at(1));
  });

  test('a deleted pet is gone from every answer', async () => {
    const db = await target.fresh();
    const keep = await newPet(db, 'Kept', 1);
    const gone = await newPet(db, 'Gone', 1);
    for (const id of [keep, gone]) {
      const written = await db
        .repository(profileRepository)
        .write({ petId: id, change: () => PETS[0]!.doc!, now: T0 });
      assert.equal(written.kind, 'done');
      added(await db.repository(photoRepository).add(newPhoto(id)));
    }
    await deletePet(db, gone, T0 + 1);
    const listings = db.repository(listingRepository);
    const left = async (extra: Partial<ListingQuery>) =>
      (await listings.search(query(extra))).map((row) => row.id);
    assert.deepEqual(await left({}), [keep]);
    assert.deepEqual(await left({ words: ['gone'] }), []);
    assert.deepEqual(await left({ words: ['labrador'] }), [keep]);
    assert.deepEqual(await left({ near: { ...BERLIN, radiusKm: 1 }, sort: 'distance' }), [keep]);
    assert.deepEqual(await left({ hasPhotos: true, sex: ['female'] }), [keep]);
    assert.deepEqual(
      (await listings.primaryPhotos([keep, gone])).map((photo) => photo.petId),
      [keep],
    );
  });
});
