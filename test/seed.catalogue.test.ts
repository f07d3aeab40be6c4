/** `seed` fills the catalogue: profiles with locations, generated photos; a first search near a city shows them. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { seedCatalogue } from '../src/modules/listings/seed.js';
import { backends, bearer, createTestContext, type TestContext } from './helpers.js';

for (const backend of await backends()) {
  describe(`seed: the demo catalogue [${backend.name}]`, () => {
    let ctx: TestContext;
    let key: string;

    before(async () => {
      ctx = await createTestContext(backend);
      ({ key } = await ctx.createKey());
    });
    after(() => ctx.close());

    test('profiles for every seeded pet, photos for the newest, a search near Berlin finds some', async () => {
      await ctx.pets.seed(300, ctx.clock.now);
      const photos = await seedCatalogue(ctx.database, 300, { withPhotos: 6, now: ctx.clock.now });
      assert.equal(photos, 12);
      const all = await ctx.app.inject({
        url: '/v1/listings?status=available,pending,sold&limit=100',
        headers: bearer(key),
      });
      for (const listing of all.json()) {
        assert.ok(listing.profile.breed, 'a profile');
        assert.ok(
          listing.profile.location.latitude > 47 && listing.profile.location.latitude < 55,
          'in Germany',
        );
      }
      const near = await ctx.app.inject({
        url: '/v1/listings?near=52.52,13.405&radiusKm=50&sort=distance&status=available,pending,sold&limit=100',
        headers: bearer(key),
      });
      assert.equal(near.statusCode, 200, near.body);
      assert.ok(near.json().length > 5, 'a first search near Berlin shows animals');
      const pictured = await ctx.app.inject({
        url: '/v1/listings?hasPhotos=true&status=available,pending,sold',
        headers: bearer(key),
      });
      assert.equal(pictured.json().length, 6);
      const photo = pictured.json()[0].primaryPhoto;
      const image = await ctx.app.inject({ url: photo.urls.medium });
      assert.equal(image.statusCode, 200);
      assert.equal(image.headers['content-type'], 'image/webp');
    });
  });
}
