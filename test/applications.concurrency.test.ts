/**
 * Applications' exactness under concurrency, on every backend: requests are sent at once, so on PostgreSQL
 * they run on different pool connections and interleave inside the database; every outcome must be exact
 * and every dependent row (order, pet, the other applications) consistent with it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { backends, bearer, createTestContext, type TestContext } from './helpers.js';
import {
  act,
  acted,
  createPet,
  getApplication,
  inReview,
  petStatusOf,
  submit,
  newApplication,
} from './support/applications.js';

for (const backend of await backends()) {
  describe(`applications under concurrency [${backend.name}]`, () => {
    let ctx: TestContext;
    let staff: string;
    let partner: string;

    before(async () => {
      ctx = await createTestContext(backend, { config: { maxOpenApplications: 50, maxOpenOrders: 1000 } });
      ({ key: staff } = await ctx.createKey({ name: 'staff' }));
      ({ key: partner } = await ctx.createKey({
        name: 'partner',
        scopes: ['applications:write', 'orders:write'],
      }));
    });
    after(() => ctx.close());

    const orderOf = async (orderId: number) =>
      (await ctx.app.inject({ url: `/v1/store/orders/${orderId}`, headers: bearer(staff) })).json<{
        status: string;
      }>();
    const ordersOfPet = async (petId: number) =>
      (await ctx.app.inject({ url: `/v1/store/orders?petId=${petId}`, headers: bearer(staff) })).json<
        { id: number; status: string }[]
      >();

    test('approvals of several applications for one pet at once: exactly one wins, one order', async () => {
      for (let round = 0; round < 5; round++) {
        const petId = await createPet(ctx.app, staff);
        const apps = [];
        for (let i = 0; i < 4; i++)
          apps.push(await inReview(ctx.app, staff, partner, petId, `race-${round}-${i}@example.org`));
        const results = await Promise.all(apps.map((a) => act(ctx.app, staff, a.id, 'approve')));
        const codes = results.map((r) => r.statusCode);
        assert.equal(codes.filter((c) => c === 200).length, 1, `round ${round}: ${codes.join(',')}`);
        for (const r of results.filter((r) => r.statusCode !== 200)) {
          assert.equal(r.statusCode, 409, r.body);
          assert.equal(r.json().code, 'pet_not_available');
        }
        const winner = results.find((r) => r.statusCode === 200)!.json();
        const orders = await ordersOfPet(petId);
        assert.deepEqual(
          orders.map((o) => o.id),
          [winner.orderId],
          "one order, the winner's",
        );
        assert.equal(await petStatusOf(ctx.app, staff, petId), 'pending');
        for (const a of apps.filter((a) => a.id !== winner.id))
          assert.equal((await getApplication(ctx.app, staff, a.id)).status, 'in_review', 'losers unchanged');
      }
    });

    test('one applicant submitting for one pet 10 times at once: one 201, the rest application_exists', async () => {
      const petId = await createPet(ctx.app, staff);
      const results = await Promise.all(
        Array.from({ length: 10 }, () => submit(ctx.app, partner, newApplication(petId, 'Twin@example.org'))),
      );
      const codes = results.map((r) => r.statusCode).sort();
      assert.deepEqual(codes, [201, ...Array<number>(9).fill(409)], codes.join(','));
      for (const r of results.filter((r) => r.statusCode === 409))
        assert.equal(r.json().code, 'application_exists');
      const list = await ctx.app.inject({ url: `/v1/applications?petId=${petId}`, headers: bearer(staff) });
      assert.equal(list.json().length, 1);
    });

    test('an approval racing a direct order for the pet: exactly one holds it', async () => {
      for (let round = 0; round < 10; round++) {
        const petId = await createPet(ctx.app, staff);
        const application = await inReview(ctx.app, staff, partner, petId, `direct-${round}@example.org`);
        const [approve, order] = await Promise.all([
          act(ctx.app, staff, application.id, 'approve'),
          ctx.app.inject({
            method: 'POST',
            url: '/v1/store/orders',
            headers: bearer(partner),
            payload: { petId },
          }),
        ]);
        const label = `round ${round}: approve ${approve.statusCode}, order ${order.statusCode}`;
        assert.equal([approve.statusCode === 200, order.statusCode === 201].filter(Boolean).length, 1, label);
        const orders = await ordersOfPet(petId);
        assert.equal(orders.length, 1, label);
        const status = (await getApplication(ctx.app, staff, application.id)).status;
        if (approve.statusCode === 200) {
          assert.equal(approve.json().orderId, orders[0]!.id, label);
          assert.equal(status, 'approved', label);
        } else {
          assert.equal(approve.json().code, 'pet_not_available', label);
          assert.equal(status, 'in_review', label);
        }
      }
    });

    test('a delivery racing a withdrawal: adopted and sold, or withdrawn with the order cancelled', async () => {
      const outcomes = new Set<string>();
      for (let round = 0; round < 12; round++) {
        const petId = await createPet(ctx.app, staff);
        const other = await submit(ctx.app, partner, newApplication(petId, `bystander-${round}@example.org`));
        assert.equal(other.statusCode, 201);
        const application = await inReview(ctx.app, staff, partner, petId, `deliver-${round}@example.org`);
        const { orderId } = await acted(ctx.app, staff, application.id, 'approve');
        const approveOrder = await ctx.app.inject({
          method: 'POST',
          url: `/v1/store/orders/${orderId}/approve`,
          headers: bearer(staff),
        });
        assert.equal(approveOrder.statusCode, 200);
        const [deliver, withdraw] = await Promise.all([
          ctx.app.inject({
            method: 'POST',
            url: `/v1/store/orders/${orderId}/deliver`,
            headers: bearer(staff),
          }),
          act(ctx.app, partner, application.id, 'withdraw', {}),
        ]);
        const label = `round ${round}: deliver ${deliver.statusCode}, withdraw ${withdraw.statusCode}`;
        assert.equal(
          [deliver.statusCode === 200, withdraw.statusCode === 200].filter(Boolean).length,
          1,
          label,
        );
        const final = await getApplication(ctx.app, staff, application.id);
        const order = await orderOf(orderId!);
        const pet = await petStatusOf(ctx.app, staff, petId);
        const bystander = await getApplication(ctx.app, staff, other.json().id);
        if (deliver.statusCode === 200) {
          assert.equal(withdraw.json().code, 'invalid_transition', label);
          assert.deepEqual(
            [final.status, order.status, pet, bystander.status],
            ['adopted', 'delivered', 'sold', 'closed'],
            label,
          );
          outcomes.add('adopted');
        } else {
          assert.equal(deliver.json().code, 'invalid_transition', label);
          assert.deepEqual(
            [final.status, order.status, pet, bystander.status],
            ['withdrawn', 'cancelled', 'available', 'submitted'],
            label,
          );
          outcomes.add('withdrawn');
        }
      }
      assert.ok(outcomes.size >= 1);
    });
  });
}
