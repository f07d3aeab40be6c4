import { defineFixture } from '../fixtures.js';

// listEvents takes no body and no path parameter.
export default defineFixture({
  driftStatuses: { listEvents: [200, 400] },
  async drift({ app, call, auth }) {
    await app.inject({
      method: 'POST',
      url: '/v1/pets',
      headers: auth(),
      payload: { name: 'E', categoryId: 1 },
    });
    const page = await call('feed', { url: '/v1/events?limit=1', headers: auth() });
    await call('feed by Link', { url: /^<([^>]+)>/.exec(String(page.headers.link))![1]!, headers: auth() });
    await call('unknown type', { url: '/v1/events?type=pet.adopted', headers: auth() });
  },
});
