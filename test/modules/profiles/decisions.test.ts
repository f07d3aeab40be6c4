/** The profiles' rules (the merge, RFC 7396, and the write), shared by both backends, checked without a database. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { mergePatch, profileWrite } from '../../../src/modules/profiles/decisions.js';
import type { ProfileRecord, ProfileWrite } from '../../../src/modules/profiles/repository.js';

test('a merge patch sets what it names, removes what it sets to null and keeps the rest', () => {
  const current = { size: 'small', traits: { goodWithDogs: true, houseTrained: false }, bio: 'calm' };
  const merged = mergePatch(current, { size: 'large', traits: { houseTrained: true }, bio: null });
  assert.deepEqual(merged, { size: 'large', traits: { goodWithDogs: true, houseTrained: true } });
  assert.deepEqual(
    current.traits,
    { goodWithDogs: true, houseTrained: false },
    'the current value is not changed',
  );
});

test('a patch that is not an object replaces the target; arrays are replaced whole', () => {
  assert.deepEqual(mergePatch({ a: 1 }, ['x']), ['x']);
  assert.deepEqual(mergePatch({ tags: ['a', 'b'] }, { tags: ['c'] }), { tags: ['c'] });
  assert.deepEqual(mergePatch('text', { a: { b: null } }), { a: {} });
});

describe('a profile write', () => {
  const T0 = Date.UTC(2026, 5, 15, 12);
  const current: ProfileRecord = {
    doc: { breed: 'collie', size: 'medium' },
    version: 2,
    updatedAt: T0 - 1000,
  };
  const write = (change: ProfileWrite['change'], ifMatch?: ProfileWrite['ifMatch']): ProfileWrite => ({
    petId: 9,
    change,
    ifMatch,
    now: T0,
  });

  test('an unknown pet, a stale If-Match and an invalid result are refused, in that order', () => {
    const invalid = () => ({ invalid: 'birthDate', message: 'must not be in the future' });
    assert.deepEqual(
      profileWrite(
        undefined,
        write(invalid, () => false),
      ),
      { kind: 'not_found' },
    );
    assert.deepEqual(
      profileWrite(
        current,
        write(invalid, (version) => version === 1),
      ),
      { kind: 'precondition_failed', version: 2 },
    );
    assert.deepEqual(
      profileWrite(
        current,
        write(invalid, (version) => version === 2),
      ),
      {
        kind: 'invalid',
        field: 'birthDate',
        message: 'must not be in the future',
      },
    );
  });

  test('stores the canonical document as the next version, changed now, with the event of what changed', () => {
    const result = profileWrite(
      current,
      write((doc) => ({ size: 'large', breed: doc.breed })),
    );
    assert.equal(result.kind, 'store');
    if (result.kind !== 'store') return;
    assert.deepEqual(result.record, { doc: { breed: 'collie', size: 'large' }, version: 3, updatedAt: T0 });
    assert.deepEqual(Object.keys(result.record.doc), ['breed', 'size'], 'fields in the fixed order');
    assert.equal(result.event.type, 'pet.profile_updated');
    const payload = JSON.parse(result.event.payload) as {
      data: { object: { id: number }; previous: Record<string, unknown>; version: number };
    };
    assert.equal(payload.data.object.id, 9);
    assert.deepEqual(payload.data.previous, { size: 'medium' });
    assert.equal(payload.data.version, 3);
  });

  test('a pet without a profile (version 0) gets version 1', () => {
    const none: ProfileRecord = { doc: {}, version: 0, updatedAt: null };
    const result = profileWrite(
      none,
      write(() => ({ breed: 'beagle' })),
    );
    assert.equal(result.kind === 'store' && result.record.version, 1);
  });
});
