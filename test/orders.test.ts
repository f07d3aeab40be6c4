/** Store orders and the inventory through the HTTP layer, on every backend (DESIGN 4.3). */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { backends, bearer, createTestContext, type TestContext } from './helpers.js';
import { assertV1Error } from './support/assertions.js';
import { act, availablePet, newOrder, PET_FOR_ORDER, petStatus, placeOrder } from './support/orders.js';

const RFC3339_UTC_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

for (const backend of await backends()) {
  describe(`orders [${backend.name}]`, () => {
    let ctx: TestContext;
    /** orders:manage (every scope). */
    let manager: string;
    /** A partner: places and cancels its own orders only. */
    let partner: string;
    let other: string;

    before(async () => {
      ctx = await createTestContext(backend, { config: { maxOpenOrders: 1000 } });
      ({ key: manager } = await ctx.createKey({ name: 'store-staff' }));
      ({ key: partner } = await ctx.createKey({ name: 'partner-a', scopes: ['orders:write', 'pets:write'] }));
      ({ key: other } = await ctx.createKey({ name: 'partner-b', scopes: ['orders:write', 'pets:write'] }));
    });
    after(() => ctx.close());

    async function expectPet(petId: number, orderStatus: string, label: string): Promise<void> {
      assert.equal(await petStatus(ctx.app, manager, petId), PET_FOR_ORDER[orderStatus], label);
    }

    test('placeOrder: 201, Location, strong ETag, the pet becomes pending; no account for a partner', async () => {
      const petId = await availablePet(ctx.app, manager);
      const res = await placeOrder(ctx.app, partner, petId);
      assert.equal(res.statusCode, 201, res.body);
      const order = res.json();
      assert.deepEqual(Object.keys(order).sort(), ['createdAt', 'id', 'petId', 'status', 'updatedAt']);
      assert.equal(order.petId, petId);
      assert.equal(order.status, 'placed');
      assert.match(order.createdAt, RFC3339_UTC_MS);
      assert.equal(order.createdAt, new Date(ctx.clock.now).toISOString());
      assert.equal(res.headers.location, `/v1/store/orders/${order.id}`);
      assert.equal(res.headers.etag, '"1"');
      await expectPet(petId, 'placed', 'pet held');
      // The manager sees the account's name.
      const seen = await ctx.app.inject({ url: `/v1/store/orders/${order.id}`, headers: bearer(manager) });
      assert.equal(seen.json().account, 'partner-a');
      const own = await ctx.app.inject({ url: `/v1/store/orders/${order.id}`, headers: bearer(partner) });
      assert.equal(own.statusCode, 200);
      assert.deepEqual(own.json(), order);
      assert.equal(own.headers.etag, '"1"');
    });

    test('placeOrder refusals: unknown pet 400, pet not available 409, bad bodies 400', async () => {
      assertV1Error(await placeOrder(ctx.app, partner, 987654321), 400, 'validation_failed', 'unknown pet');
      const res = await placeOrder(ctx.app, partner, 987654321);
      assert.equal(res.json().details[0].field, 'petId');
      const { petId } = await newOrder(ctx.app, other);
      assertV1Error(await placeOrder(ctx.app, partner, petId), 409, 'pet_not_available', 'held pet');
      const sold = (
        await ctx.app.inject({
          method: 'POST',
          url: '/v1/pets',
          headers: bearer(manager),
          payload: { name: 'Sold', categoryId: 1, status: 'sold' },
        })
      ).json().id;
      assertV1Error(await placeOrder(ctx.app, partner, sold), 409, 'pet_not_available', 'sold pet');
      for (const payload of [
        {},
        { petId: 'x' },
        { petId: 0 },
        { petId: 1.5 },
        { petId: sold, note: 1 },
        [],
      ]) {
        const bad = await ctx.app.inject({
          method: 'POST',
          url: '/v1/store/orders',
          headers: bearer(partner),
          payload: payload as object,
        });
        assertV1Error(bad, 400, 'validation_failed', JSON.stringify(payload));
      }
    });

    test('every transition, and the pet follows its order', async () => {
      const a = await newOrder(ctx.app, partner);
      let res = await act(ctx.app, manager, a.id, 'approve');
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().status, 'approved');
      assert.equal(res.json().account, 'partner-a');
      assert.equal(res.headers.etag, '"2"');
      await expectPet(a.petId, 'approved', 'approved');
      res = await act(ctx.app, manager, a.id, 'deliver', { 'content-type': 'application/json' });
      assert.equal(res.statusCode, 400, 'an empty body sent as JSON is not JSON');
      res = await ctx.app.inject({
        method: 'POST',
        url: `/v1/store/orders/${a.id}/deliver`,
        headers: bearer(manager),
        payload: {},
      });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().status, 'delivered');
      await expectPet(a.petId, 'delivered', 'delivered');

      const b = await newOrder(ctx.app, partner);
      res = await act(ctx.app, partner, b.id, 'cancel');
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().status, 'cancelled');
      assert.equal(res.json().account, undefined);
      await expectPet(b.petId, 'cancelled', 'cancelled from placed');
      // The pet can be ordered again.
      const again = await placeOrder(ctx.app, other, b.petId);
      assert.equal(again.statusCode, 201);
      await act(ctx.app, manager, again.json().id, 'approve');
      res = await act(ctx.app, manager, again.json().id, 'cancel');
      assert.equal(res.json().status, 'cancelled');
      await expectPet(b.petId, 'cancelled', 'cancelled from approved');
    });

    test('refused transitions: 409 invalid_transition naming the status; the pet does not move', async () => {
      const delivered = await newOrder(ctx.app, partner);
      await act(ctx.app, manager, delivered.id, 'approve');
      await act(ctx.app, manager, delivered.id, 'deliver');
      const cancelled = await newOrder(ctx.app, partner);
      await act(ctx.app, partner, cancelled.id, 'cancel');
      const placed = await newOrder(ctx.app, partner);
      const approved = await newOrder(ctx.app, other);
      await act(ctx.app, manager, approved.id, 'approve');
      const cases: [typeof placed, string, 'approve' | 'deliver' | 'cancel'][] = [
        [placed, 'placed', 'deliver'],
        [approved, 'approved', 'approve'],
        [delivered, 'delivered', 'approve'],
        [delivered, 'delivered', 'deliver'],
        [delivered, 'delivered', 'cancel'],
        [cancelled, 'cancelled', 'approve'],
        [cancelled, 'cancelled', 'deliver'],
        [cancelled, 'cancelled', 'cancel'],
      ];
      for (const [order, status, action] of cases) {
        const res = await act(ctx.app, manager, order.id, action);
        assertV1Error(res, 409, 'invalid_transition', `${action} a ${status} order`);
        assert.match(res.json().message, new RegExp(`^Order ${order.id} is ${status}; it cannot be`));
        await expectPet(order.petId, status, `${action} a ${status} order leaves the pet`);
      }
      await act(ctx.app, partner, placed.id, 'cancel');
    });

    test("visibility: another account's order is 404 for get and every action; partners cannot approve", async () => {
      const mine = await newOrder(ctx.app, partner);
      assertV1Error(
        await ctx.app.inject({ url: `/v1/store/orders/${mine.id}`, headers: bearer(other) }),
        404,
        'order_not_found',
        'get',
      );
      assertV1Error(await act(ctx.app, other, mine.id, 'cancel'), 404, 'order_not_found', 'cancel');
      assertV1Error(await act(ctx.app, partner, mine.id, 'approve'), 403, 'insufficient_scope', 'approve');
      assertV1Error(await act(ctx.app, partner, mine.id, 'deliver'), 403, 'insufficient_scope', 'deliver');
      assertV1Error(await act(ctx.app, manager, 987654321, 'cancel'), 404, 'order_not_found', 'unknown');
      assertV1Error(
        await ctx.app.inject({ url: '/v1/store/orders/987654321', headers: bearer(manager) }),
        404,
        'order_not_found',
        'unknown get',
      );
      await expectPet(mine.petId, 'placed', 'untouched');
      await act(ctx.app, partner, mine.id, 'cancel');
    });

    test('action bodies other than none or {} are 400', async () => {
      const order = await newOrder(ctx.app, partner);
      for (const payload of [{ status: 'cancelled' }, [], 'x']) {
        const res = await ctx.app.inject({
          method: 'POST',
          url: `/v1/store/orders/${order.id}/cancel`,
          headers: { ...bearer(partner), 'content-type': 'application/json' },
          payload: JSON.stringify(payload),
        });
        assertV1Error(res, 400, /^(validation_failed|invalid_json)$/, JSON.stringify(payload));
      }
      await expectPet(order.petId, 'placed', 'untouched');
      await act(ctx.app, partner, order.id, 'cancel');
    });

    test('If-Match: stale 412 with the current ETag and nothing changes; current or * applies', async () => {
      const order = await newOrder(ctx.app, partner);
      let res = await act(ctx.app, manager, order.id, 'approve', { 'if-match': '"7", W/"1"' });
      assertV1Error(res, 412, 'precondition_failed', 'stale');
      assert.equal(res.headers.etag, '"1"');
      res = await act(ctx.app, manager, order.id, 'approve', { 'if-match': '"0", "1"' });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.headers.etag, '"2"');
      res = await act(ctx.app, partner, order.id, 'cancel', { 'if-match': '"1"' });
      assertV1Error(res, 412, 'precondition_failed', 'stale after approve');
      await expectPet(order.petId, 'approved', 'still held');
      res = await act(ctx.app, partner, order.id, 'cancel', { 'if-match': '*' });
      assert.equal(res.statusCode, 200);
      await expectPet(order.petId, 'cancelled', 'released');
    });

    test('If-None-Match on getOrder and listOrders answers 304', async () => {
      const order = await newOrder(ctx.app, partner);
      const url = `/v1/store/orders/${order.id}`;
      let res = await ctx.app.inject({ url, headers: { ...bearer(partner), 'if-none-match': '"1"' } });
      assert.equal(res.statusCode, 304);
      assert.equal(res.body, '');
      assert.equal(res.headers.etag, '"1"');
      const list = await ctx.app.inject({ url: '/v1/store/orders', headers: bearer(partner) });
      const etag = String(list.headers.etag);
      assert.match(etag, /^W\/"/);
      res = await ctx.app.inject({
        url: '/v1/store/orders',
        headers: { ...bearer(partner), 'if-none-match': etag },
      });
      assert.equal(res.statusCode, 304);
      await act(ctx.app, partner, order.id, 'cancel');
      res = await ctx.app.inject({ url, headers: { ...bearer(partner), 'if-none-match': '"1"' } });
      assert.equal(res.statusCode, 200, 'changed since');
      res = await ctx.app.inject({
        url: '/v1/store/orders',
        headers: { ...bearer(partner), 'if-none-match': etag },
      });
      assert.equal(res.statusCode, 200, 'the page changed');
    });

    test('Idempotency-Key: placeOrder and actions replay the first response', async () => {
      const petId = await availablePet(ctx.app, manager);
      const headers = { 'idempotency-key': `place-${backend.name}` };
      const first = await placeOrder(ctx.app, partner, petId, headers);
      assert.equal(first.statusCode, 201);
      const again = await placeOrder(ctx.app, partner, petId, headers);
      assert.equal(again.statusCode, 201);
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.deepEqual(again.json(), first.json());
      assert.equal(again.headers.location, first.headers.location);
      const other = await placeOrder(ctx.app, partner, petId + 100000, headers);
      assertV1Error(other, 422, 'idempotency_key_reused', 'different body');
      const id = first.json().id;
      const cancelHeaders = { 'idempotency-key': `cancel-${backend.name}` };
      const c1 = await act(ctx.app, partner, id, 'cancel', cancelHeaders);
      const c2 = await act(ctx.app, partner, id, 'cancel', cancelHeaders);
      assert.equal(c1.statusCode, 200);
      assert.equal(c2.statusCode, 200, 'a retried cancel replays instead of 409');
      assert.equal(c2.headers['idempotent-replayed'], 'true');
      assert.deepEqual(c2.json(), c1.json());
    });

    test('open_order_limit: at most MAX_OPEN_ORDERS (default 5) open orders; closing one frees a slot', async () => {
      const limited = await createTestContext(backend);
      try {
        const { key: staff } = await limited.createKey();
        const { key } = await limited.createKey({ name: 'limited', scopes: ['orders:write'] });
        const made: { id: number }[] = [];
        for (let i = 0; i < 5; i++) {
          const res = await placeOrder(limited.app, key, await availablePet(limited.app, staff));
          assert.equal(res.statusCode, 201, res.body);
          made.push(res.json());
        }
        await act(limited.app, staff, made[0]!.id, 'approve');
        const petId = await availablePet(limited.app, staff);
        const res = await placeOrder(limited.app, key, petId);
        assertV1Error(res, 409, 'open_order_limit', 'sixth');
        assert.match(res.json().message, /5 open orders/);
        assert.equal(
          await petStatus(limited.app, staff, petId),
          'available',
          'the refused order holds nothing',
        );
        // Delivered and cancelled orders no longer count.
        await act(limited.app, staff, made[0]!.id, 'deliver');
        assert.equal((await placeOrder(limited.app, key, petId)).statusCode, 201);
        const full = await placeOrder(limited.app, key, await availablePet(limited.app, staff));
        assertV1Error(full, 409, 'open_order_limit', 'full again');
        await act(limited.app, key, made[1]!.id, 'cancel');
        const freed = await placeOrder(limited.app, key, await availablePet(limited.app, staff));
        assert.equal(freed.statusCode, 201);
      } finally {
        await limited.close();
      }
    });

    test('listOrders: own orders or all; filters; paging with Link; ordered by id', async () => {
      const { key } = await ctx.createKey({ name: 'lister', scopes: ['orders:write', 'pets:write'] });
      const ids: number[] = [];
      for (let i = 0; i < 3; i++) ids.push((await newOrder(ctx.app, key)).id);
      await act(ctx.app, key, ids[1]!, 'cancel');
      let res = await ctx.app.inject({ url: '/v1/store/orders', headers: bearer(key) });
      assert.equal(res.statusCode, 200);
      assert.deepEqual(
        res.json().map((o: { id: number }) => o.id),
        ids,
      );
      assert.ok(res.json().every((o: object) => !('account' in o)));
      res = await ctx.app.inject({ url: '/v1/store/orders?status=cancelled', headers: bearer(key) });
      assert.deepEqual(
        res.json().map((o: { id: number }) => o.id),
        [ids[1]],
      );
      const petOf = (await ctx.app.inject({ url: `/v1/store/orders/${ids[2]}`, headers: bearer(key) })).json()
        .petId;
      res = await ctx.app.inject({ url: `/v1/store/orders?petId=${petOf}`, headers: bearer(key) });
      assert.deepEqual(
        res.json().map((o: { id: number }) => o.id),
        [ids[2]],
      );
      // Paging: limit 2 over 3 orders.
      res = await ctx.app.inject({ url: '/v1/store/orders?limit=2', headers: bearer(key) });
      assert.deepEqual(
        res.json().map((o: { id: number }) => o.id),
        ids.slice(0, 2),
      );
      const link = /^<([^>]+)>; rel="next"$/.exec(String(res.headers.link));
      assert.ok(link, `Link: ${res.headers.link}`);
      assert.match(link[1]!, /^\/v1\/store\/orders\?limit=2&cursor=/);
      res = await ctx.app.inject({ url: link[1]!, headers: bearer(key) });
      assert.deepEqual(
        res.json().map((o: { id: number }) => o.id),
        [ids[2]],
      );
      assert.equal(res.headers.link, undefined);
      // The manager sees every account's orders, with the account.
      res = await ctx.app.inject({ url: '/v1/store/orders?limit=100', headers: bearer(manager) });
      const all = res.json() as { id: number; account: string }[];
      assert.ok(ids.every((id) => all.some((o) => o.id === id && o.account === 'lister')));
      assert.ok(all.some((o) => o.account !== 'lister'));
      assert.deepEqual(
        all.map((o) => o.id),
        [...all.map((o) => o.id)].sort((x, y) => x - y),
      );
      for (const query of ['limit=0', 'limit=101', 'status=sold', 'petId=0', 'page=2']) {
        assertV1Error(
          await ctx.app.inject({ url: `/v1/store/orders?${query}`, headers: bearer(key) }),
          400,
          'validation_failed',
          query,
        );
      }
      assertV1Error(
        await ctx.app.inject({ url: '/v1/store/orders?cursor=bogus', headers: bearer(key) }),
        400,
        'invalid_cursor',
        'cursor=bogus',
      );
    });

    test('getInventory counts pets by status, zeros included', async () => {
      const fresh = await createTestContext(backend);
      try {
        const { key } = await fresh.createKey();
        let res = await fresh.app.inject({ url: '/v1/store/inventory', headers: bearer(key) });
        assert.equal(res.statusCode, 200);
        assert.deepEqual(res.json(), { available: 0, pending: 0, sold: 0 });
        const a = await newOrder(fresh.app, key);
        await availablePet(fresh.app, key);
        const b = await newOrder(fresh.app, key);
        await act(fresh.app, key, b.id, 'approve');
        await act(fresh.app, key, b.id, 'deliver');
        res = await fresh.app.inject({ url: '/v1/store/inventory', headers: bearer(key) });
        assert.deepEqual(res.json(), { available: 1, pending: 1, sold: 1 });
        void a;
        const { key: reader } = await fresh.createKey({ scopes: ['pets:read'] });
        assert.equal(
          (await fresh.app.inject({ url: '/v1/store/inventory', headers: bearer(reader) })).statusCode,
          200,
        );
      } finally {
        await fresh.close();
      }
    });
  });
}
