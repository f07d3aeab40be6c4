/**
 * The profiles repository contract (src/modules/profiles/repository.ts) on every backend: reading a pet's
 * profile (none yet: version 0), writes that replace the document with version + 1 and append their
 * `pet.profile_updated` event in the same transaction (a fault after the row rolls both back), refusals
 * that write nothing, If-Match tested on the current version (also across two instances), idempotent
 * replays, the search columns following the document, the pet's deletion taking its profile along, and the
 * seed, which writes first profiles only.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import type { Database } from '../../src/db/database.js';
import { listingRepository } from '../../src/modules/listings/repository.js';
import type { ListingQuery } from '../../src/modules/listings/query.js';
import {
  profileRepository,
  type ProfileDoc,
  type ProfileRecord,
  type ProfileWriteResult,
} from '../../src/modules/profiles/repository.js';
import { contractSuite, DAY, T0 } from '../support/contract.js';
import {
  countRows,
  deletePet,
  idempotencyInput,
  newPet,
  profileEvents,
  type ProfileEvent,
} from '../support/catalogue.js';
import { failEventAppend } from '../support/faults.js';

const DOG: ProfileDoc = {
  description: 'Calm and gentle, loves long walks.',
  breed: 'Labrador Retriever',
  sex: 'female',
  ageGroup: 'young',
  birthDate: '2024-03-01',
  size: 'medium',
  colors: ['black'],
  goodWith: { children: true, dogs: false, cats: null },
  houseTrained: true,
  specialNeeds: false,
  location: { postalCode: '10115', latitude: 52.52, longitude: 13.405 },
};
const SMALLER: ProfileDoc = { breed: 'Beagle', size: 'small', goodWith: { children: false } };

function done(result: ProfileWriteResult): ProfileRecord {
  assert.equal(result.kind, 'done', `expected done, got ${JSON.stringify(result)}`);
  return (result as { record: ProfileRecord }).record;
}

contractSuite('profiles', (target) => {
  let s: Database;
  before(async () => {
    s = await target.fresh();
  });
  const profiles = (db = s) => db.repository(profileRepository);
  const put = (petId: number, doc: ProfileDoc, now = T0, db = s) =>
    profiles(db).write({ petId, change: () => doc, now });

  describe('reading and writing', () => {
    test('get: undefined for an unknown pet; version 0, {} and no updatedAt for a pet without one', async () => {
      assert.equal(await profiles().get(987_654_321), undefined);
      const petId = await newPet(s);
      assert.deepEqual(await profiles().get(petId), { doc: {}, version: 0, updatedAt: null });
    });

    test('write replaces the document (fields left out are gone), version + 1, updatedAt = now', async () => {
      const petId = await newPet(s);
      const first = done(await put(petId, DOG, T0 + 1));
      assert.deepEqual(first, { doc: DOG, version: 1, updatedAt: T0 + 1 });
      assert.deepEqual(await profiles().get(petId), first);
      const second = done(await put(petId, SMALLER, T0 + 2));
      assert.deepEqual(second, { doc: SMALLER, version: 2, updatedAt: T0 + 2 });
      assert.deepEqual(await profiles().get(petId), second);
      assert.equal(await countRows(s, 'pet_profiles', 'pet_id', petId), 1, 'one row a pet');
    });

    test('the change is given the stored document', async () => {
      const petId = await newPet(s);
      done(await put(petId, DOG));
      const seen: ProfileDoc[] = [];
      const record = done(
        await profiles().write({
          petId,
          change: (current) => {
            seen.push(current);
            return { ...current, breed: 'Mixed breed' };
          },
          now: T0 + 5,
        }),
      );
      assert.deepEqual(seen, [DOG]);
      assert.deepEqual(record.doc, { ...DOG, breed: 'Mixed breed' });
    });

    test('each write appends one pet.profile_updated: the profile, the old values of what changed, the version', async () => {
      const petId = await newPet(s);
      done(await put(petId, DOG, T0 + 1));
      done(await put(petId, SMALLER, T0 + 2));
      const events = await profileEvents(s, petId);
      assert.deepEqual(
        events.map((e) => [e.type, e.data.version, e.timestamp]),
        [
          ['pet.profile_updated', 1, new Date(T0 + 1).toISOString()],
          ['pet.profile_updated', 2, new Date(T0 + 2).toISOString()],
        ],
      );
      assert.deepEqual(events[0]!.data.object, {
        id: petId,
        profile: { ...DOG, updatedAt: new Date(T0 + 1).toISOString() },
      });
      assert.deepEqual(
        events[0]!.data.previous,
        Object.fromEntries(Object.keys(DOG).map((field) => [field, null])),
      );
      assert.deepEqual(events[1]!.data.object.profile, {
        ...SMALLER,
        updatedAt: new Date(T0 + 2).toISOString(),
      });
      // Every field of DOG changed (replaced or removed): each with its value before.
      assert.deepEqual(events[1]!.data.previous, DOG);
      done(await put(petId, { ...SMALLER, description: 'Added.' }, T0 + 3));
      assert.deepEqual((await profileEvents(s, petId))[2]!.data.previous, { description: null });
    });

    test('writes of one profile at the same time each get their own version, events in version order', async () => {
      const petId = await newPet(s);
      const docs = [DOG, SMALLER, { breed: 'Poodle' }];
      const results = (await Promise.all(docs.map((doc, i) => put(petId, doc, T0 + i)))).map(done);
      assert.deepEqual(results.map((r) => r.version).sort(), [1, 2, 3]);
      const last = results.find((r) => r.version === 3)!;
      assert.deepEqual(await profiles().get(petId), last);
      assert.deepEqual(
        (await profileEvents(s, petId)).map((e) => e.data.version),
        [1, 2, 3],
      );
    });
  });

  describe('refusals write nothing', () => {
    test('an unknown pet: not_found, no row, no event', async () => {
      const before = (await profileEvents(s)).length;
      assert.deepEqual(await put(987_654_321, DOG), { kind: 'not_found' });
      assert.equal(await countRows(s, 'pet_profiles', 'pet_id', 987_654_321), 0);
      assert.equal((await profileEvents(s)).length, before);
    });

    test('If-Match is asked about the current version; refused: precondition_failed with it', async () => {
      const petId = await newPet(s);
      const asked: number[] = [];
      const askedFor = (wanted: number) => (version: number) => {
        asked.push(version);
        return version === wanted;
      };
      const stale = await profiles().write({ petId, change: () => DOG, ifMatch: askedFor(1), now: T0 });
      assert.deepEqual(stale, { kind: 'precondition_failed', version: 0 });
      assert.deepEqual(await profiles().get(petId), { doc: {}, version: 0, updatedAt: null });
      const first = done(
        await profiles().write({ petId, change: () => DOG, ifMatch: (v) => v === 0, now: T0 }),
      );
      assert.deepEqual(
        await profiles().write({ petId, change: () => SMALLER, ifMatch: askedFor(0), now: T0 }),
        { kind: 'precondition_failed', version: 1 },
      );
      assert.deepEqual(asked, [0, 1]);
      assert.deepEqual(await profiles().get(petId), first);
      assert.equal((await profileEvents(s, petId)).length, 1);
    });

    test('a change that is invalid as a whole: the field and why, nothing written', async () => {
      const petId = await newPet(s);
      const first = done(await put(petId, DOG));
      const refused = await profiles().write({
        petId,
        change: () => ({ invalid: 'location.longitude', message: 'is required with the other coordinate' }),
        now: T0 + 1,
      });
      assert.deepEqual(refused, {
        kind: 'invalid',
        field: 'location.longitude',
        message: 'is required with the other coordinate',
      });
      assert.deepEqual(await profiles().get(petId), first);
      assert.equal((await profileEvents(s, petId)).length, 1);
    });
  });

  describe('one transaction', () => {
    test('a fault after the row is written (the event append fails) rolls the write back', async () => {
      const petId = await newPet(s);
      const other = await newPet(s);
      const first = done(await put(petId, DOG, T0));
      const injected = new Error('injected fault');
      const restore = failEventAppend(s, (event) =>
        (JSON.parse(event.payload) as ProfileEvent).data.object.id === petId ? injected : undefined,
      );
      try {
        // In one turn: on SQLite one batch, whose other write still commits.
        const [faulted, fine] = await Promise.allSettled([
          put(petId, SMALLER, T0 + 1),
          put(other, SMALLER, T0 + 1),
        ]);
        assert.equal(faulted.status, 'rejected');
        assert.equal((faulted as PromiseRejectedResult).reason, injected, 'the fault itself, no other error');
        assert.equal(fine.status, 'fulfilled');
      } finally {
        restore();
      }
      assert.deepEqual(await profiles().get(petId), first, 'the document and version as before');
      assert.equal((await profileEvents(s, petId)).length, 1, 'no event of the rolled back write');
      assert.deepEqual(await profiles().get(other), { doc: SMALLER, version: 1, updatedAt: T0 + 1 });
      assert.equal((await profileEvents(s, other)).length, 1);
      // The same write again, without the fault, is version 2.
      assert.equal(done(await put(petId, SMALLER, T0 + 2)).version, 2);
    });

    test('two instances on one database writing at If-Match version 0 at once: exactly one wins', async () => {
      const pair = await target.createPair();
      try {
        await pair.a.migrate();
        const petId = await newPet(pair.a);
        const at0 = (db: Database, doc: ProfileDoc) =>
          profiles(db).write({ petId, change: () => doc, ifMatch: (v) => v === 0, now: T0 });
        const results = await Promise.all([at0(pair.a, DOG), at0(pair.b, SMALLER)]);
        assert.deepEqual(results.map((r) => r.kind).sort(), ['done', 'precondition_failed']);
        const winner = done(results.find((r) => r.kind === 'done')!);
        assert.deepEqual(
          results.find((r) => r.kind !== 'done'),
          { kind: 'precondition_failed', version: 1 },
        );
        assert.deepEqual(await profiles(pair.b).get(petId), winner);
        assert.equal((await profileEvents(pair.a, petId)).length, 1);
      } finally {
        await pair.close();
      }
    });
  });

  test('with an idempotency key: a repeat replays the recorded profile and writes nothing; another body is refused', async () => {
    const petId = await newPet(s);
    const key = await idempotencyInput(s, 'putPetProfile', `key-${petId}`, 'body-1', T0);
    const first = await profiles().write({ petId, change: () => DOG, now: T0 }, key);
    const record = done(first);
    const again = await profiles().write(
      { petId, change: () => SMALLER, now: T0 + 1 },
      { ...key, now: T0 + 1 },
    );
    assert.deepEqual(again, { kind: 'replayed', status: 200, body: record });
    assert.deepEqual(await profiles().get(petId), record, 'not written twice');
    assert.equal((await profileEvents(s, petId)).length, 1);
    const mismatch = await profiles().write(
      { petId, change: () => SMALLER, now: T0 + 2 },
      { ...key, fingerprint: 'body-2', now: T0 + 2 },
    );
    assert.deepEqual(mismatch, { kind: 'idempotency_mismatch' });
    assert.deepEqual(await profiles().get(petId), record);
  });

  test('the search columns follow the document', async () => {
    const db = await target.fresh();
    const petId = await newPet(db);
    const search = (extra: Partial<ListingQuery>) =>
      db
        .repository(listingRepository)
        .search({ status: ['available'], booleans: {}, sort: 'newest', limit: 10, filters: {}, ...extra })
        .then((rows) => rows.map((row) => row.id));
    const near = { latitude: 52.52, longitude: 13.405, radiusKm: 5 };
    done(await put(petId, DOG, T0, db));
    assert.deepEqual(
      await search({ sex: ['female'], size: ['medium'], booleans: { goodWithChildren: true } }),
      [petId],
    );
    assert.deepEqual(await search({ near, words: ['labrador'] }), [petId]);
    done(await put(petId, SMALLER, T0 + 1, db));
    assert.deepEqual(await search({ sex: ['female'] }), [], 'no sex any more');
    assert.deepEqual(await search({ near }), [], 'no location any more');
    assert.deepEqual(await search({ words: ['labrador'] }), [], 'the old breed is no word of it');
    assert.deepEqual(await search({ size: ['small'], booleans: { goodWithChildren: false } }), [petId]);
    assert.deepEqual(await search({ words: ['beagle'] }), [petId]);
  });

  test('deleting the pet deletes its profile', async () => {
    const petId = await newPet(s);
    done(await put(petId, DOG));
    await deletePet(s, petId, T0 + 1);
    assert.equal(await profiles().get(petId), undefined);
    assert.equal(await countRows(s, 'pet_profiles', 'pet_id', petId), 0);
    assert.deepEqual(await put(petId, DOG, T0 + 2), { kind: 'not_found' });
  });

  test('seed writes first profiles (version 1, updatedAt = now, no event); a pet that has one keeps it', async () => {
    const db = await target.fresh();
    const [edited, untouched, later] = [await newPet(db), await newPet(db), await newPet(db)];
    await profiles(db).seed(
      [
        { petId: edited, doc: DOG },
        { petId: untouched, doc: DOG },
      ],
      T0,
    );
    assert.deepEqual(await profiles(db).get(untouched), { doc: DOG, version: 1, updatedAt: T0 });
    assert.deepEqual(await profileEvents(db), [], 'the seed appends no event');
    const mine = done(await put(edited, SMALLER, T0 + 1, db));
    assert.equal(mine.version, 2);
    // Run again, a day later, over the same pets and one more.
    await profiles(db).seed(
      [
        { petId: edited, doc: { breed: 'Seeded again' } },
        { petId: untouched, doc: { breed: 'Seeded again' } },
        { petId: later, doc: DOG },
      ],
      T0 + DAY,
    );
    assert.deepEqual(await profiles(db).get(edited), mine, 'the edited profile stays as edited');
    assert.deepEqual(await profiles(db).get(untouched), { doc: DOG, version: 1, updatedAt: T0 });
    assert.deepEqual(await profiles(db).get(later), { doc: DOG, version: 1, updatedAt: T0 + DAY });
    assert.equal((await profileEvents(db)).length, 1, 'the one edit');
    const bySize = await db.repository(listingRepository).search({
      status: ['available'],
      booleans: {},
      size: ['medium'],
      sort: 'oldest',
      limit: 10,
      filters: {},
    });
    assert.deepEqual(
      bySize.map((row) => row.id),
      [untouched, later],
      'the seeded search columns',
    );
  });
});
