import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { defineFixture, type FixtureContext } from '../fixtures.js';

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

/** A new `available` pet, made with createPet; returns its id. */
async function availablePet(app: FastifyInstance, key: string): Promise<number> {
  const res = await app.inject({
    method: 'POST',
    url: '/v1/pets',
    headers: bearer(key),
    payload: { name: 'Orderable', categoryId: 1 },
  });
  assert.equal(res.statusCode, 201, res.body);
  return (res.json() as { id: number }).id;
}

/** An order in the status `operationId` acts on: placed for approve and cancel, approved for deliver. */
async function orderFor(ctx: FixtureContext, operationId?: string): Promise<number> {
  const placed = await ctx.app.inject({
    method: 'POST',
    url: '/v1/store/orders',
    headers: bearer(ctx.key),
    payload: { petId: await availablePet(ctx.app, ctx.key) },
  });
  assert.equal(placed.statusCode, 201, placed.body);
  const order = placed.json() as { id: number };
  if (operationId === 'deliverOrder') {
    const res = await ctx.app.inject({
      method: 'POST',
      url: `/v1/store/orders/${order.id}/approve`,
      headers: bearer(ctx.key),
    });
    assert.equal(res.statusCode, 200, res.body);
  }
  return order.id;
}

export default defineFixture({
  driftStatuses: {
    placeOrder: [201, 400, 409],
    listOrders: [200, 304, 400],
    getOrder: [200, 304, 404],
    approveOrder: [200, 409, 412],
    deliverOrder: [200],
    cancelOrder: [200, 404],
    getInventory: [200],
  },
  // Each valid call uses its order (or its pet) up, so each request gets a new one.
  fresh: ['placeOrder', 'approveOrder', 'deliverOrder', 'cancelOrder'],
  bodies: {
    placeOrder: async (ctx) => ({ petId: await availablePet(ctx.app, ctx.key) }),
  },
  ids: {
    orderId: orderFor,
  },
  conditionalHeaders: {
    'placeOrder 201': ['idempotent-replayed'],
    'listOrders 200': ['link'],
    'approveOrder 200': ['idempotent-replayed'],
    'deliverOrder 200': ['idempotent-replayed'],
    'cancelOrder 200': ['idempotent-replayed'],
  },
  async drift({ app, call, auth }) {
    const pet = async () =>
      (
        await app.inject({
          method: 'POST',
          url: '/v1/pets',
          headers: auth(),
          payload: { name: 'O', categoryId: 1 },
        })
      ).json<{ id: number }>().id;
    const place = (petId: number) =>
      call('place', { method: 'POST', url: '/v1/store/orders', headers: auth(), payload: { petId } });
    const first = await pet();
    const order = (await place(first)).json<{ id: number }>();
    await place(first);
    await call('unknown pet', {
      method: 'POST',
      url: '/v1/store/orders',
      headers: auth(),
      payload: { petId: 987654321 },
    });
    const second = (await place(await pet())).json<{ id: number }>();
    const list = await call('list', { url: '/v1/store/orders?limit=1', headers: auth() });
    await call('list 304', {
      url: '/v1/store/orders?limit=1',
      headers: { ...auth(), 'if-none-match': String(list.headers.etag) },
    });
    await call('bad list', { url: '/v1/store/orders?status=lost', headers: auth() });
    const url = `/v1/store/orders/${order.id}`;
    await call('get', { url, headers: auth() });
    await call('get 304', { url, headers: { ...auth(), 'if-none-match': '"1"' } });
    await call('unknown', { url: '/v1/store/orders/987654321', headers: auth() });
    await call('stale approve', {
      method: 'POST',
      url: `${url}/approve`,
      headers: { ...auth(), 'if-match': '"9"' },
    });
    await call('approve', { method: 'POST', url: `${url}/approve`, headers: auth() });
    await call('approve again', { method: 'POST', url: `${url}/approve`, headers: auth() });
    await call('deliver', { method: 'POST', url: `${url}/deliver`, headers: auth() });
    await call('cancel', { method: 'POST', url: `/v1/store/orders/${second.id}/cancel`, headers: auth() });
    await call('cancel unknown', {
      method: 'POST',
      url: '/v1/store/orders/987654321/cancel',
      headers: auth(),
    });
    await call('inventory', { url: '/v1/store/inventory', headers: auth() });
  },
});
