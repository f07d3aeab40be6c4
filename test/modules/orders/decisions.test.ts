/** The orders' rules, shared by both backends, checked without a database. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { orderEvents, TRANSITIONS } from '../../../src/modules/orders/decisions.js';
import type { OrderRecord } from '../../../src/modules/orders/repository.js';

const T0 = Date.UTC(2026, 5, 15, 12, 0, 0);
const placed: OrderRecord = {
  id: 7,
  accountId: 3,
  accountName: 'shop',
  petId: 11,
  status: 'placed',
  version: 1,
  createdAt: T0,
  updatedAt: T0,
};

test('an order moves only from the statuses its action allows, and moves its pet as the action says', () => {
  assert.deepEqual(TRANSITIONS.approve, { from: ['placed'], to: 'approved', pet: undefined });
  assert.deepEqual(TRANSITIONS.deliver, { from: ['approved'], to: 'delivered', pet: 'sold' });
  assert.deepEqual(TRANSITIONS.cancel, { from: ['placed', 'approved'], to: 'cancelled', pet: 'available' });
  for (const { from } of Object.values(TRANSITIONS)) {
    assert.ok(!from.includes('delivered') && !from.includes('cancelled'), 'a closed order never moves');
  }
});

test("placing writes order.placed for the order's account, then the pet's move for everyone", () => {
  const pet = { id: 11, name: 'Rex', categoryId: 1, status: 'pending' as const, version: 2 };
  const events = orderEvents(undefined, placed, { ...pet, previousStatus: 'available' }, T0);
  assert.deepEqual(
    events.map((e) => [e.type, e.accountId]),
    [
      ['order.placed', 3],
      ['pet.updated', null],
    ],
  );
  const order = JSON.parse(events[0]!.payload) as { data: { object: Record<string, unknown> } };
  assert.equal(order.data.object.account, undefined, 'the event shows the order as its own account sees it');
  const moved = JSON.parse(events[1]!.payload) as { data: { previous: unknown; version: number } };
  assert.deepEqual(moved.data.previous, { status: 'available' });
  assert.equal(moved.data.version, 2);
});

test('a transition writes order.<status> with what changed, and no pet event when the pet stays', () => {
  const approved = { ...placed, status: 'approved' as const, version: 2, updatedAt: T0 + 1000 };
  const [event, ...rest] = orderEvents(placed, approved, undefined, T0 + 1000);
  assert.equal(rest.length, 0);
  assert.equal(event!.type, 'order.approved');
  const { data } = JSON.parse(event!.payload) as { data: { previous: Record<string, unknown> } };
  assert.deepEqual(Object.keys(data.previous).sort(), ['status', 'updatedAt']);
  assert.equal(data.previous.status, 'placed');
});
