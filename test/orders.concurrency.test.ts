/**
 * Exactness under concurrency (DESIGN 4.3), on every backend: requests are sent at once, so on PostgreSQL
 * they run on different pool connections and interleave inside the database; the outcome must be exact.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { backends, bearer, createTestContext, type TestContext } from './helpers.js';
import { act, availablePet, newOrder, PET_FOR_ORDER, petStatus, placeOrder } from './support/orders.js';

const MAX_OPEN = 4;

for (const backend of await backends()) {
  describe(`orders under concurrency [${backend.name}]`, () => {
    let ctx: TestContext;
    let staff: string;

    before(async () => {
      ctx = await createTestContext(backend, { config: { maxOpenOrders: MAX_OPEN } });
      ({ key: staff } = await ctx.createKey({ name: 'staff' }));
    });
    after(() => ctx.close());

    test('30 accounts ordering one pet at once: exactly one 201, the rest 409 pet_not_available', async () => {
      const keys = await Promise.all(
        Array.from({ length: 30 }, (_, i) => ctx.createKey({ name: `racer-${i}`, scopes: ['orders:write'] })),
      );
      const petId = await availablePet(ctx.app, staff);
      const results = await Promise.all(keys.map(({ key }) => placeOrder(ctx.app, key, petId)));
      const codes = results.map((r) => r.statusCode);
      assert.equal(codes.filter((c) => c === 201).length, 1, codes.join(','));
      assert.equal(codes.filter((c) => c === 409).length, 29, codes.join(','));
      for (const r of results.filter((r) => r.statusCode === 409))
        assert.equal(r.json().code, 'pet_not_available');
      assert.equal(await petStatus(ctx.app, staff, petId), 'pending');
      const orders = await ctx.app.inject({ url: `/v1/store/orders?petId=${petId}`, headers: bearer(staff) });
      assert.equal(orders.json().length, 1, 'one order exists for the pet');
    });

    test('approve racing cancel on one order, 20 times: exactly one wins; the pet always matches', async () => {
      const { key: owner } = await ctx.createKey({ name: 'owner', scopes: ['orders:write', 'pets:write'] });
      for (let round = 0; round < 20; round++) {
        const order = await newOrder(ctx.app, owner);
        const [approve, cancel] = await Promise.all([
          act(ctx.app, staff, order.id, 'approve'),
          act(ctx.app, owner, order.id, 'cancel'),
        ]);
        const final = (
          await ctx.app.inject({ url: `/v1/store/orders/${order.id}`, headers: bearer(staff) })
        ).json();
        const label = `round ${round}: approve ${approve.statusCode}, cancel ${cancel.statusCode}, final ${final.status}`;
        if (approve.statusCode === 200) {
          // Approved first: the cancel may still apply afterwards (approved → cancelled is allowed).
          assert.ok(cancel.statusCode === 200 || cancel.statusCode === 409, label);
          assert.equal(final.status, cancel.statusCode === 200 ? 'cancelled' : 'approved', label);
        } else {
          // Cancelled first: the approve must be refused.
          assert.equal(approve.statusCode, 409, label);
          assert.equal(approve.json().code, 'invalid_transition', label);
          assert.equal(cancel.statusCode, 200, label);
          assert.equal(final.status, 'cancelled', label);
        }
        assert.equal(await petStatus(ctx.app, staff, order.petId), PET_FOR_ORDER[final.status], label);
        if (final.status === 'approved') await act(ctx.app, owner, order.id, 'cancel');
      }
    });

    test('two cancels or approve racing deliver: exactly one wins', async () => {
      const { key: owner } = await ctx.createKey({ name: 'owner-2', scopes: ['orders:write', 'pets:write'] });
      for (let round = 0; round < 10; round++) {
        const order = await newOrder(ctx.app, owner);
        const cancels = await Promise.all([
          act(ctx.app, staff, order.id, 'cancel'),
          act(ctx.app, owner, order.id, 'cancel'),
          act(ctx.app, staff, order.id, 'cancel'),
        ]);
        assert.deepEqual(cancels.map((r) => r.statusCode).sort(), [200, 409, 409], `round ${round}`);
        assert.equal(await petStatus(ctx.app, staff, order.petId), 'available');
        const second = await newOrder(ctx.app, owner);
        await act(ctx.app, staff, second.id, 'approve');
        const [deliver, cancel] = await Promise.all([
          act(ctx.app, staff, second.id, 'deliver'),
          act(ctx.app, owner, second.id, 'cancel'),
        ]);
        assert.deepEqual([deliver.statusCode, cancel.statusCode].sort(), [200, 409], `round ${round}`);
        const final = deliver.statusCode === 200 ? 'delivered' : 'cancelled';
        assert.equal(await petStatus(ctx.app, staff, second.petId), PET_FOR_ORDER[final]);
      }
    });

    test(`one account placing MAX_OPEN_ORDERS + 3 orders at once on distinct pets: exactly ${MAX_OPEN} succeed`, async () => {
      const { key } = await ctx.createKey({ name: 'greedy', scopes: ['orders:write'] });
      const pets = await Promise.all(
        Array.from({ length: MAX_OPEN + 3 }, () => availablePet(ctx.app, staff)),
      );
      const results = await Promise.all(pets.map((petId) => placeOrder(ctx.app, key, petId)));
      const codes = results.map((r) => r.statusCode);
      assert.equal(codes.filter((c) => c === 201).length, MAX_OPEN, codes.join(','));
      for (const r of results.filter((r) => r.statusCode !== 201))
        assert.equal(r.json().code, 'open_order_limit');
      const statuses = await Promise.all(pets.map((petId) => petStatus(ctx.app, staff, petId)));
      assert.equal(statuses.filter((s) => s === 'pending').length, MAX_OPEN, 'only ordered pets are held');
    });
  });
}
