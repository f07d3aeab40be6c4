import assert from 'node:assert/strict';
import { defineFixture, type FixtureContext } from '../fixtures.js';
import { webhookRepository } from './repository.js';

// An account has each URL once: every endpoint the fixtures make gets its own.
let made = 0;
const freshUrl = (): string => `https://receiver.example/hook/${++made}`;

async function endpoint(ctx: FixtureContext): Promise<number> {
  const res = await ctx.app.inject({
    method: 'POST',
    url: '/v1/webhook-endpoints',
    headers: { authorization: `Bearer ${ctx.key}` },
    payload: { url: freshUrl(), events: ['*'] },
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json<{ id: number }>().id;
}

export default defineFixture({
  driftStatuses: {
    createWebhookEndpoint: [201, 400, 409],
    listWebhookEndpoints: [200],
    getWebhookEndpoint: [200, 404],
    updateWebhookEndpoint: [200, 400],
    deleteWebhookEndpoint: [204, 404],
    rotateWebhookSecret: [200],
    listWebhookDeliveries: [200],
    retryWebhookDelivery: [202, 404],
  },
  // Deleting uses the endpoint up; creating uses its URL up (an account has each URL once).
  fresh: ['deleteWebhookEndpoint', 'createWebhookEndpoint'],
  bodies: {
    createWebhookEndpoint: () => ({ url: freshUrl(), events: ['pet.created'] }),
    updateWebhookEndpoint: () => ({ events: ['*'] }),
  },
  ids: {
    endpointId: endpoint,
    // Deliveries are made by the dispatcher's fan-out, not through the API: an event and one fan-out.
    deliveryId: async (ctx) => {
      const endpointId = Number(await ctx.id('endpointId'));
      await ctx.appendEvent('pet.created');
      const repo = ctx.database.repository(webhookRepository);
      await repo.fanOut(Date.now(), 100);
      const [delivery] = await repo.listDeliveries({ endpointId, limit: 1 });
      assert.ok(delivery, 'the fan-out made a delivery for the fixture endpoint');
      return delivery.id;
    },
  },
  async drift({ call, auth, database, now, appendEvent }) {
    const hooks = '/v1/webhook-endpoints';
    const body = { url: 'https://receiver.example/hook', events: ['*'] };
    const created = await call('create', { method: 'POST', url: hooks, headers: auth(), payload: body });
    // A second one, so that the first page of one has a next (its Link).
    await call('create', {
      method: 'POST',
      url: hooks,
      headers: auth(),
      payload: { ...body, url: `${body.url}?second` },
    });
    await call('same url', { method: 'POST', url: hooks, headers: auth(), payload: body });
    await call('bad url', {
      method: 'POST',
      url: hooks,
      headers: auth(),
      payload: { ...body, url: 'http://x.example/' },
    });
    const url = `${hooks}/${created.json<{ id: number }>().id}`;
    await call('list', { url: `${hooks}?limit=1`, headers: auth() });
    await call('get', { url, headers: auth() });
    await call('unknown', { url: `${hooks}/987654321`, headers: auth() });
    await call('patch', { method: 'PATCH', url, headers: auth(), payload: { enabled: false } });
    await call('bad patch', { method: 'PATCH', url, headers: auth(), payload: { enabled: null } });
    await call('rotate', { method: 'POST', url: `${url}/rotate-secret`, headers: auth() });
    await call('patch back', { method: 'PATCH', url, headers: auth(), payload: { enabled: true } });
    await appendEvent('pet.created');
    await appendEvent('pet.updated');
    await database.repository(webhookRepository).fanOut(now(), 10);
    const deliveries = await call('deliveries', { url: `${url}/deliveries?limit=1`, headers: auth() });
    const delivery = deliveries.json<{ id: number }[]>()[0]?.id ?? 0;
    await call('retry', { method: 'POST', url: `${url}/deliveries/${delivery}/retry`, headers: auth() });
    await call('retry unknown', {
      method: 'POST',
      url: `${url}/deliveries/987654321/retry`,
      headers: auth(),
    });
    await call('delete', { method: 'DELETE', url, headers: auth() });
    await call('delete again', { method: 'DELETE', url, headers: auth() });
  },
});
