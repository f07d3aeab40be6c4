import assert from 'node:assert/strict';
import { defineFixture } from '../fixtures.js';

// searchListings takes no body and no path parameter.
export default defineFixture({
  driftStatuses: { searchListings: [200, 400] },
  conditionalHeaders: { 'searchListings 200': ['link'] },
  async drift({ app, call, auth }) {
    // A pet with a located profile, so that the search answers a listing (its schema checked), not [].
    const pet = await app.inject({
      method: 'POST',
      url: '/v1/pets',
      headers: auth(),
      payload: { name: 'Catalogued', categoryId: 1 },
    });
    const petId = (pet.json() as { id: number }).id;
    const profile = await app.inject({
      method: 'PUT',
      url: `/v1/pets/${petId}/profile`,
      headers: auth(),
      payload: { breed: 'Mix', location: { latitude: 1, longitude: 2 } },
    });
    assert.equal(profile.statusCode, 200, profile.body);
    const found = await call('search', {
      url: '/v1/listings?near=1,2&radiusKm=10&sort=distance&limit=1',
      headers: auth(),
    });
    assert.equal((found.json() as unknown[]).length, 1, 'the search finds the located pet');
    await call('bad search', { url: '/v1/listings?sort=up', headers: auth() });
  },
});
