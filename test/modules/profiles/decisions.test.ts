/** The profile merge (JSON Merge Patch, RFC 7396), shared by both backends, checked without a database. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mergePatch } from '../../../src/modules/profiles/decisions.js';

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
