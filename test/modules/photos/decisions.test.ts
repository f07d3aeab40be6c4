/** The photos' rules, shared by both backends, checked without a database. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  photoAddition,
  photoMove,
  photoRemoval,
  recordOf,
  WRITE_STATUS,
  type Shift,
} from '../../../src/modules/photos/decisions.js';
import type { PhotoRecord } from '../../../src/modules/photos/schemas.js';

const T0 = Date.UTC(2026, 5, 15);
const photo = (position: number): PhotoRecord => ({
  id: `ph_${position}`,
  petId: 7,
  position,
  width: 800,
  height: 600,
  createdAt: T0,
});

/**
 * A pet's photo ids in position order after a write, as the backends' statements leave them: the removed
 * photo deleted, the shift applied to the others, the moved one placed.
 */
function apply(
  ids: readonly string[],
  write: { shift: Shift | undefined; removed?: string; placed?: { id: string; position: number } },
): string[] {
  const rows = ids.filter((id) => id !== write.removed).map((id) => ({ id, position: ids.indexOf(id) }));
  for (const row of rows) {
    const { shift, placed } = write;
    if (row.id === placed?.id) row.position = placed.position;
    else if (shift && row.position >= shift.from && row.position <= shift.to) row.position += shift.by;
  }
  const byPosition = rows.sort((a, b) => a.position - b.position);
  assert.deepEqual(
    byPosition.map((row) => row.position),
    byPosition.map((_, i) => i),
    'positions stay 0..n-1',
  );
  return byPosition.map((row) => row.id);
}

const IDS = ['ph_0', 'ph_1', 'ph_2', 'ph_3', 'ph_4'];

test('a photo goes last, for a pet that exists and holds fewer than the most it may', () => {
  assert.deepEqual(photoAddition(undefined, 10), { kind: 'not_found' });
  assert.deepEqual(photoAddition(10, 10), { kind: 'limit' });
  assert.deepEqual(photoAddition(11, 10), { kind: 'limit' });
  assert.deepEqual(photoAddition(0, 10), { kind: 'insert', position: 0 });
  assert.deepEqual(photoAddition(9, 10), { kind: 'insert', position: 9 });
});

test('removing a photo closes its gap: the ones after it move one step up', () => {
  assert.deepEqual(photoRemoval(undefined, photo(0)), { kind: 'not_found' });
  assert.deepEqual(photoRemoval(5, undefined), { kind: 'not_found' });
  const middle = photoRemoval(5, photo(1));
  assert.deepEqual(middle, { kind: 'delete', photo: photo(1), shift: { from: 2, to: 4, by: -1 } });
  assert.deepEqual(apply(IDS, { shift: { from: 2, to: 4, by: -1 }, removed: 'ph_1' }), [
    'ph_0',
    'ph_2',
    'ph_3',
    'ph_4',
  ]);
  assert.deepEqual(photoRemoval(5, photo(4)), { kind: 'delete', photo: photo(4), shift: undefined });
  assert.deepEqual(photoRemoval(1, photo(0)), { kind: 'delete', photo: photo(0), shift: undefined });
});

test('moving a photo shifts the ones between its old and new place one step towards the old', () => {
  assert.deepEqual(photoMove(undefined, photo(1), 0), { kind: 'not_found' });
  assert.deepEqual(photoMove(5, undefined, 0), { kind: 'not_found' });
  assert.deepEqual(photoMove(5, photo(1), 5), { kind: 'bad_position', count: 5 });
  const later = photoMove(5, photo(1), 3);
  assert.deepEqual(later, {
    kind: 'place',
    photo: { ...photo(1), position: 3 },
    shift: { from: 2, to: 3, by: -1 },
  });
  assert.deepEqual(apply(IDS, { shift: { from: 2, to: 3, by: -1 }, placed: { id: 'ph_1', position: 3 } }), [
    'ph_0',
    'ph_2',
    'ph_3',
    'ph_1',
    'ph_4',
  ]);
  const first = photoMove(5, photo(4), 0);
  assert.deepEqual(first, {
    kind: 'place',
    photo: { ...photo(4), position: 0 },
    shift: { from: 0, to: 3, by: 1 },
  });
  assert.deepEqual(apply(IDS, { shift: { from: 0, to: 3, by: 1 }, placed: { id: 'ph_4', position: 0 } }), [
    'ph_4',
    'ph_0',
    'ph_1',
    'ph_2',
    'ph_3',
  ]);
  assert.deepEqual(photoMove(5, photo(2), 2), { kind: 'place', photo: photo(2), shift: undefined });
});

test('a write records its photo under its status for the replay; a refusal records nothing', () => {
  assert.deepEqual(WRITE_STATUS, { add: 201, remove: 204, move: 200 });
  assert.deepEqual(recordOf(WRITE_STATUS.add)({ kind: 'added', photo: photo(0) }), {
    status: 201,
    body: photo(0),
  });
  assert.deepEqual(recordOf(WRITE_STATUS.move)({ kind: 'done', photo: photo(1) }), {
    status: 200,
    body: photo(1),
  });
  assert.equal(recordOf(WRITE_STATUS.add)({ kind: 'limit' }), undefined);
  assert.equal(recordOf(WRITE_STATUS.move)({ kind: 'bad_position', count: 2 }), undefined);
});
