/** The pets' rules (src/modules/pets/decisions.ts), shared by every write path, checked without a database. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  createdEvent,
  decideDelete,
  decideUpdate,
  deleteReads,
  updateReads,
  type UpdateRequest,
} from '../../../src/modules/pets/decisions.js';
import type { VersionedPet } from '../../../src/modules/pets/repository.js';

const T0 = Date.UTC(2026, 5, 15, 12, 0, 0);
const rex: VersionedPet = { pet: { id: 11, name: 'Rex', categoryId: 1, status: 'available' }, version: 4 };
const change = (over: Partial<UpdateRequest> = {}): UpdateRequest => ({
  change: {},
  precondition: undefined,
  now: T0,
  ...over,
});

function payload(event: { payload: string }): {
  type: string;
  timestamp: string;
  data: { object: unknown; previous: unknown; version: number };
} {
  return JSON.parse(event.payload) as ReturnType<typeof payload>;
}

describe('a change of a pet (PATCH)', () => {
  test('refuses in order: no pet, then the precondition, then the category, then the hold', () => {
    const everything = change({
      change: { categoryId: 9, status: 'sold' },
      precondition: (version) => version === 3,
    });
    assert.deepEqual(decideUpdate(undefined, everything, {}), { kind: 'not_found' });
    assert.deepEqual(decideUpdate(rex, everything, { categoryExists: false, held: true }), {
      kind: 'precondition_failed',
      version: 4,
    });
    const matching = { ...everything, precondition: (version: number) => version === 4 };
    assert.deepEqual(decideUpdate(rex, matching, { categoryExists: false, held: true }), {
      kind: 'unknown_category',
    });
    assert.deepEqual(decideUpdate(rex, matching, { categoryExists: true, held: true }), {
      kind: 'open_order',
    });
  });

  test('asks for the category and the hold only when they can decide', () => {
    assert.deepEqual(updateReads(undefined, change({ change: { categoryId: 2, status: 'sold' } })), {
      hold: false,
    });
    const stale = change({ change: { status: 'sold' }, precondition: () => false });
    assert.deepEqual(updateReads(rex, stale), { hold: false }, 'a refused precondition reads nothing more');
    assert.deepEqual(updateReads(rex, change({ change: { name: 'Max' } })), {
      category: undefined,
      hold: false,
    });
    assert.deepEqual(updateReads(rex, change({ change: { categoryId: 2 } })), { category: 2, hold: false });
    assert.deepEqual(updateReads(rex, change({ change: { status: 'available' } })), {
      category: undefined,
      hold: false,
    });
    assert.deepEqual(updateReads(rex, change({ change: { status: 'pending' } })), {
      category: undefined,
      hold: true,
    });
  });

  test('a held pet may still change its name and category, and keep its status', () => {
    const decision = decideUpdate(
      rex,
      change({ change: { name: 'Max', categoryId: 2, status: 'available' } }),
      { categoryExists: true, held: true },
    );
    assert.equal(decision.kind, 'update');
  });

  test('writes the patched fields, the others kept, at the next version, with pet.updated of the old values', () => {
    const decision = decideUpdate(rex, change({ change: { name: 'Max', status: 'pending' } }), {
      held: false,
    });
    assert.ok(decision.kind === 'update');
    assert.equal(decision.version, 4, 'the write is conditional on the version read');
    assert.deepEqual(decision.after, {
      pet: { id: 11, name: 'Max', categoryId: 1, status: 'pending' },
      version: 5,
    });
    assert.deepEqual(Object.keys(decision.after.pet), ['id', 'name', 'categoryId', 'status']);
    const event = payload(decision.event);
    assert.equal(event.type, 'pet.updated');
    assert.equal(event.timestamp, new Date(T0).toISOString());
    assert.deepEqual(event.data, {
      object: { id: 11, name: 'Max', categoryId: 1, status: 'pending' },
      previous: { name: 'Rex', status: 'available' },
      version: 5,
    });
    assert.equal(decision.event.accountId, null, 'pet events are for everyone');
  });

  test('an empty patch is a change all the same: the version moves, nothing is previous', () => {
    const decision = decideUpdate(rex, change(), {});
    assert.ok(decision.kind === 'update');
    assert.equal(decision.after.version, 5);
    assert.deepEqual(payload(decision.event).data.previous, {});
  });

  test('a store that did not read what decides fails loudly rather than writing', () => {
    assert.throws(() => decideUpdate(rex, change({ change: { categoryId: 2 } }), {}), /category/);
    assert.throws(() => decideUpdate(rex, change({ change: { status: 'sold' } }), {}), /hold/);
  });
});

describe('a removal of a pet (DELETE)', () => {
  const now = T0;
  test('refuses in order: no pet, then the precondition, then the hold', () => {
    const stale = { precondition: (version: number) => version === 3, now };
    assert.deepEqual(decideDelete(undefined, stale, {}), { kind: 'not_found' });
    assert.deepEqual(decideDelete(rex, stale, { held: true }), { kind: 'precondition_failed', version: 4 });
    assert.deepEqual(decideDelete(rex, { precondition: undefined, now }, { held: true }), {
      kind: 'open_order',
    });
  });

  test('asks for the hold whenever the pet alone does not refuse', () => {
    assert.deepEqual(deleteReads(undefined, { precondition: undefined, now }), { hold: false });
    assert.deepEqual(deleteReads(rex, { precondition: () => false, now }), { hold: false });
    assert.deepEqual(deleteReads(rex, { precondition: () => true, now }), { hold: true });
    assert.throws(() => decideDelete(rex, { precondition: undefined, now }, {}), /hold/);
  });

  test('deletes at the version read, with pet.deleted of the pet as it was', () => {
    const decision = decideDelete(rex, { precondition: undefined, now }, { held: false });
    assert.ok(decision.kind === 'delete');
    assert.equal(decision.version, 4);
    const event = payload(decision.event);
    assert.equal(event.type, 'pet.deleted');
    assert.deepEqual(event.data, { object: rex.pet, previous: {}, version: 4 });
  });
});

test('a new pet is announced by pet.created at version 1, for everyone', () => {
  const event = createdEvent(rex.pet, T0, null);
  assert.equal(event.accountId, null);
  assert.equal(event.traceparent, null);
  assert.deepEqual(payload(event), {
    id: event.id,
    type: 'pet.created',
    timestamp: new Date(T0).toISOString(),
    data: { object: rex.pet, previous: {}, version: 1 },
  });
});
