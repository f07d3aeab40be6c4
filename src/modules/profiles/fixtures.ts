import { defineFixture } from '../fixtures.js';

export default defineFixture({
  driftStatuses: {
    getPetProfile: [200, 304, 404],
    putPetProfile: [200, 400, 412],
    patchPetProfile: [200, 400],
  },
  bodies: {
    putPetProfile: () => ({ breed: 'Fixture Mix', size: 'medium', goodWith: { children: true } }),
    patchPetProfile: () => ({ description: 'Fixture description.' }),
  },
  conditionalHeaders: {
    'putPetProfile 200': ['idempotent-replayed'],
    'patchPetProfile 200': ['idempotent-replayed'],
  },
  async drift({ app, call, auth }) {
    const pet = await app.inject({
      method: 'POST',
      url: '/v1/pets',
      headers: auth(),
      payload: { name: 'Catalogued', categoryId: 1 },
    });
    const profile = `/v1/pets/${(pet.json() as { id: number }).id}/profile`;
    await call('empty profile', { url: profile, headers: auth() });
    await call('unknown pet', { url: '/v1/pets/987654321/profile', headers: auth() });
    await call('put', {
      method: 'PUT',
      url: profile,
      headers: auth(),
      payload: {
        breed: 'Mix',
        goodWith: { children: true, cats: null },
        location: { latitude: 1, longitude: 2 },
      },
    });
    await call('profile 304', { url: profile, headers: { ...auth(), 'if-none-match': '"1"' } });
    await call('bad put', { method: 'PUT', url: profile, headers: auth(), payload: { size: 'huge' } });
    await call('stale put', {
      method: 'PUT',
      url: profile,
      headers: { ...auth(), 'if-match': '"7"' },
      payload: { breed: 'Mix' },
    });
    await call('patch', { method: 'PATCH', url: profile, headers: auth(), payload: { breed: null } });
    await call('bad patch', { method: 'PATCH', url: profile, headers: auth(), payload: {} });
  },
});
