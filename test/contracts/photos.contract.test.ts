/**
 * The photos repository contract (src/modules/photos/repository.ts) on every backend: a pet's photos at
 * positions 0..n-1 in list order, `add` putting the photo last with its files (never past `max`, also when
 * adds race, within one instance or across two), `remove` closing the gap and taking the files along (a
 * rendering served before is not served after), `move` shifting the photos between, refusals that change
 * nothing, idempotent replays, a fault inside `add` rolling the whole photo back, and the pet's deletion
 * taking its photos and files with it.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import type { Database } from '../../src/db/database.js';
import { photoRepository } from '../../src/modules/photos/repository.js';
import { PHOTO_SIZES, type PhotoRecord, type PhotoSize } from '../../src/modules/photos/schemas.js';
import { contractSuite, T0 } from '../support/contract.js';
import {
  added,
  countRows,
  deletePet,
  idempotencyInput,
  newPet,
  newPhoto,
  photoBytes as bytes,
} from '../support/catalogue.js';

contractSuite('photos', (target) => {
  let s: Database;
  before(async () => {
    s = await target.fresh();
  });
  const photos = (db = s) => db.repository(photoRepository);
  /** A pet with `n` photos, added one after another. */
  async function petWith(n: number, db = s): Promise<{ petId: number; ids: string[] }> {
    const petId = await newPet(db);
    const ids: string[] = [];
    for (let i = 0; i < n; i++) ids.push(added(await photos(db).add(newPhoto(petId, { now: T0 + i }))).id);
    return { petId, ids };
  }
  const order = async (petId: number, db = s) => {
    const list = (await photos(db).list(petId))!;
    assert.deepEqual(
      list.map((p) => p.position),
      list.map((_, i) => i),
      'positions 0..n-1 in list order',
    );
    return list.map((p) => p.id);
  };

  describe('adding and reading', () => {
    test('an unknown pet: count and list undefined; a pet without photos: 0 and []', async () => {
      assert.equal(await photos().count(987_654_321), undefined);
      assert.equal(await photos().list(987_654_321), undefined);
      const petId = await newPet(s);
      assert.equal(await photos().count(petId), 0);
      assert.deepEqual(await photos().list(petId), []);
    });

    test('add puts each photo last; list returns the records in position order', async () => {
      const petId = await newPet(s);
      const records: PhotoRecord[] = [];
      for (let i = 0; i < 3; i++) {
        const photo = newPhoto(petId, { width: 100 + i, height: 200 + i, now: T0 + i });
        const record = added(await photos().add(photo));
        assert.deepEqual(record, {
          id: photo.id,
          petId,
          position: i,
          width: 100 + i,
          height: 200 + i,
          createdAt: T0 + i,
        });
        records.push(record);
      }
      assert.deepEqual(await photos().list(petId), records);
      assert.equal(await photos().count(petId), 3);
    });

    test('file: the bytes of each rendering and of the original; an unknown photo has none', async () => {
      const { ids } = await petWith(1);
      const id = ids[0]!;
      for (const size of PHOTO_SIZES) assert.deepEqual(await photos().file(id, size), bytes(id, size));
      assert.deepEqual(await photos().file(id, 'original' as PhotoSize), bytes(id, 'original'));
      assert.equal(await photos().file('no-such-photo', 'small'), undefined);
      assert.equal(await photos().exists(id), true);
      assert.equal(await photos().exists('no-such-photo'), false);
    });

    test('add for an unknown pet: not_found, nothing stored', async () => {
      const photo = newPhoto(987_654_321);
      assert.deepEqual(await photos().add(photo), { kind: 'not_found' });
      assert.equal(await photos().exists(photo.id), false);
      assert.equal(await countRows(s, 'pet_photo_files', 'photo_id', photo.id), 0);
    });

    test('add at max: limit, nothing stored', async () => {
      const { petId, ids } = await petWith(2);
      const photo = newPhoto(petId, { max: 2 });
      assert.deepEqual(await photos().add(photo), { kind: 'limit' });
      assert.equal(await photos().exists(photo.id), false);
      assert.equal(await countRows(s, 'pet_photo_files', 'photo_id', photo.id), 0);
      assert.deepEqual(await order(petId), ids);
      added(await photos().add(newPhoto(petId, { max: 3 })));
    });

    test('adds to one pet at the same time: each its own position, never more than max', async () => {
      const petId = await newPet(s);
      const results = await Promise.all(
        Array.from({ length: 5 }, () => photos().add(newPhoto(petId, { max: 3 }))),
      );
      assert.deepEqual(results.map((r) => r.kind).sort(), ['added', 'added', 'added', 'limit', 'limit']);
      const positions = results.flatMap((r) => (r.kind === 'added' ? [r.photo.position] : []));
      assert.deepEqual(positions.sort(), [0, 1, 2]);
      assert.equal((await order(petId)).length, 3);
    });

    test('two instances on one database adding at once: never more than max', async () => {
      const pair = await target.createPair();
      try {
        await pair.a.migrate();
        const petId = await newPet(pair.a);
        const results = await Promise.all(
          [pair.a, pair.b, pair.a, pair.b].map((db) => photos(db).add(newPhoto(petId, { max: 2 }))),
        );
        assert.deepEqual(results.map((r) => r.kind).sort(), ['added', 'added', 'limit', 'limit']);
        assert.equal((await order(petId, pair.b)).length, 2);
      } finally {
        await pair.close();
      }
    });
  });

  describe('removing and moving', () => {
    test('remove closes the gap, takes the files along; a rendering served before is not served after', async () => {
      const { petId, ids } = await petWith(4);
      const [a, b, c, d] = ids as [string, string, string, string];
      assert.deepEqual(await photos().file(b, 'medium'), bytes(b, 'medium'), 'served once (and maybe kept)');
      const removed = await photos().remove(petId, b);
      assert.equal(removed.kind, 'done');
      assert.deepEqual((removed as { photo: PhotoRecord }).photo.id, b);
      assert.deepEqual(await order(petId), [a, c, d]);
      assert.equal(await photos().count(petId), 3);
      assert.equal(await photos().exists(b), false);
      assert.equal(await photos().file(b, 'medium'), undefined);
      assert.equal(await countRows(s, 'pet_photo_files', 'photo_id', b), 0);
      // The last one, and then the first: still dense.
      assert.equal((await photos().remove(petId, d)).kind, 'done');
      assert.equal((await photos().remove(petId, a)).kind, 'done');
      assert.deepEqual(await order(petId), [c]);
    });

    test("remove of an unknown photo, or of another pet's: not_found, nothing changed", async () => {
      const { petId, ids } = await petWith(2);
      const other = await petWith(1);
      assert.deepEqual(await photos().remove(petId, 'no-such-photo'), { kind: 'not_found' });
      assert.deepEqual(await photos().remove(other.petId, ids[0]!), { kind: 'not_found' });
      assert.deepEqual(await photos().remove(987_654_321, ids[0]!), { kind: 'not_found' });
      assert.deepEqual(await order(petId), ids);
      assert.deepEqual(await order(other.petId), other.ids);
    });

    test('move shifts the photos between the old and the new position', async () => {
      const { petId, ids } = await petWith(4);
      const [a, b, c, d] = ids as [string, string, string, string];
      const moved = await photos().move(petId, d, 0);
      assert.equal(moved.kind, 'done');
      assert.deepEqual(
        [(moved as { photo: PhotoRecord }).photo.id, (moved as { photo: PhotoRecord }).photo.position],
        [d, 0],
      );
      assert.deepEqual(await order(petId), [d, a, b, c]);
      assert.equal((await photos().move(petId, d, 3)).kind, 'done');
      assert.deepEqual(await order(petId), [a, b, c, d]);
      assert.equal((await photos().move(petId, a, 2)).kind, 'done');
      assert.deepEqual(await order(petId), [b, c, a, d]);
      assert.equal((await photos().move(petId, c, 1)).kind, 'done');
      assert.deepEqual(await order(petId), [b, c, a, d], 'to where it is: nothing moves');
    });

    test('move past the end: bad_position with the count; unknown photo or pet: not_found; nothing moves', async () => {
      const { petId, ids } = await petWith(3);
      assert.deepEqual(await photos().move(petId, ids[0]!, 3), { kind: 'bad_position', count: 3 });
      assert.deepEqual(await photos().move(petId, 'no-such-photo', 0), { kind: 'not_found' });
      assert.deepEqual(await photos().move(987_654_321, ids[0]!, 0), { kind: 'not_found' });
      const other = await petWith(1);
      assert.deepEqual(await photos().move(other.petId, ids[2]!, 0), { kind: 'not_found' });
      assert.deepEqual(await order(petId), ids);
    });
  });

  test('with an idempotency key: a repeat replays the recorded answer and writes nothing again', async () => {
    const petId = await newPet(s);
    const key = await idempotencyInput(s, 'addPetPhoto', `add-${petId}`, 'image-1');
    const photo = added(await photos().add(newPhoto(petId), key));
    const again = await photos().add(newPhoto(petId), { ...key, now: T0 + 1 });
    assert.deepEqual(again, { kind: 'replayed', status: 201, body: photo });
    assert.deepEqual(await order(petId), [photo.id], 'one photo, not two');
    assert.deepEqual(await photos().add(newPhoto(petId), { ...key, fingerprint: 'image-2' }), {
      kind: 'idempotency_mismatch',
    });
    const second = added(await photos().add(newPhoto(petId)));
    const removal = await idempotencyInput(s, 'deletePetPhoto', `remove-${petId}`, photo.id);
    assert.equal((await photos().remove(petId, photo.id, removal)).kind, 'done');
    // Replayed, not run again: the photo now at position 0 stays.
    assert.deepEqual(await photos().remove(petId, photo.id, removal), {
      kind: 'replayed',
      status: 204,
      body: photo,
    });
    assert.deepEqual(await order(petId), [second.id]);
  });

  test('a fault inside add, after the photo row is written, leaves no photo and no file', async () => {
    const petId = await newPet(s);
    const other = await newPet(s);
    const injected = new Error('injected fault');
    const faulty = newPhoto(petId);
    // Read when the renderings are written, after the photo's row and its original.
    Object.defineProperty(faulty.files, 'small', {
      enumerable: true,
      get() {
        throw injected;
      },
    });
    const [failed, fine] = await Promise.allSettled([photos().add(faulty), photos().add(newPhoto(other))]);
    assert.equal(failed.status, 'rejected');
    assert.equal((failed as PromiseRejectedResult).reason, injected, 'the fault itself, no other error');
    assert.equal(fine.status, 'fulfilled', 'the other add of the turn commits');
    assert.equal(await photos().exists(faulty.id), false);
    assert.equal(await countRows(s, 'pet_photos', 'id', faulty.id), 0);
    assert.equal(await countRows(s, 'pet_photo_files', 'photo_id', faulty.id), 0);
    assert.deepEqual(await photos().list(petId), []);
    // The next photo of the pet is at position 0: the failed one left no gap.
    assert.equal(added(await photos().add(newPhoto(petId))).position, 0);
    assert.equal((await order(other)).length, 1);
  });

  test('deleting the pet deletes its photos and their files', async () => {
    const { petId, ids } = await petWith(2);
    await photos().file(ids[0]!, 'small');
    await deletePet(s, petId, T0 + 1);
    assert.equal(await photos().list(petId), undefined);
    assert.equal(await photos().count(petId), undefined);
    for (const id of ids) {
      assert.equal(await photos().exists(id), false);
      assert.equal(await photos().file(id, 'small'), undefined, 'not even one served before');
      assert.equal(await countRows(s, 'pet_photo_files', 'photo_id', id), 0);
    }
    assert.equal(await countRows(s, 'pet_photos', 'pet_id', petId), 0);
    assert.deepEqual(await photos().add(newPhoto(petId)), { kind: 'not_found' });
  });
});
