/** The client SDK's catalogue methods (as built) against the real server on a real socket, on every backend. */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { PetAdoptionClient, PetAdoptionError } from '@pet-adoption/client';
import sharp from 'sharp';
import { backends, createTestContext, type TestContext } from './helpers.js';

for (const backend of await backends()) {
  describe(`client SDK: profiles, photos, listings [${backend.name}]`, () => {
    let ctx: TestContext;
    let client: PetAdoptionClient;

    before(async () => {
      ctx = await createTestContext(backend);
      await ctx.app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = ctx.app.server.address() as AddressInfo;
      const { key } = await ctx.createKey({ name: 'sdk' });
      client = new PetAdoptionClient({ apiKey: key, baseUrl: `http://127.0.0.1:${port}` });
    });
    after(() => ctx.close());

    test('profile get/put/patch, with If-Match from the remembered ETag', async () => {
      const pet = await client.pets.create({ name: 'Sdk', categoryId: 1 });
      assert.deepEqual(await client.pets.profile.get(pet.id), { updatedAt: null });
      const put = await client.pets.profile.put(pet.id, { breed: 'Mix', size: 'small' });
      assert.equal(put.breed, 'Mix');
      assert.equal(client.etagOf(`/pets/${pet.id}/profile`), '"1"');
      const patched = await client.pets.profile.patch(pet.id, { breed: null, houseTrained: true });
      assert.equal(patched.breed, undefined);
      assert.equal(patched.houseTrained, true);
      // A stale ETag (another writer in between) is refused.
      await ctx.app.inject({
        method: 'PATCH',
        url: `/v1/pets/${pet.id}/profile`,
        headers: { authorization: `Bearer ${(await ctx.createKey()).key}` },
        payload: { size: 'large' },
      });
      await assert.rejects(
        client.pets.profile.patch(pet.id, { size: 'medium' }),
        (error: unknown) => error instanceof PetAdoptionError && error.code === 'precondition_failed',
      );
    });

    test('photos: add from a Buffer, a Blob and a stream; list, reorder, download, delete', async () => {
      const pet = await client.pets.create({ name: 'Sdk photos', categoryId: 1 });
      const image = (color: string) =>
        sharp({ create: { width: 64, height: 48, channels: 3, background: color } })
          .jpeg()
          .toBuffer();
      const a = await client.pets.photos.add(pet.id, await image('#ff0000'));
      const b = await client.pets.photos.add(
        pet.id,
        new Blob([new Uint8Array(await image('#00ff00'))], { type: 'image/jpeg' }),
      );
      const c = await client.pets.photos.add(pet.id, Readable.from([await image('#0000ff')]));
      assert.deepEqual(
        (await client.pets.photos.list(pet.id)).map((p) => p.id),
        [a.id, b.id, c.id],
      );
      await client.pets.photos.reorder(pet.id, c.id, 0);
      assert.deepEqual(
        (await client.pets.photos.list(pet.id)).map((p) => p.id),
        [c.id, a.id, b.id],
      );
      const bytes = await client.pets.photos.download(c.id, 'small');
      assert.equal((await sharp(bytes).metadata()).format, 'webp');
      await client.pets.photos.delete(pet.id, a.id);
      assert.deepEqual(
        (await client.pets.photos.list(pet.id)).map((p) => p.id),
        [c.id, b.id],
      );
      await assert.rejects(
        client.pets.photos.add(pet.id, new TextEncoder().encode('not an image'), {
          contentType: 'image/png',
        }),
        (error: unknown) => error instanceof PetAdoptionError && error.code === 'invalid_image',
      );
    });

    test('listings.search iterates every page', async () => {
      const made: number[] = [];
      for (let i = 0; i < 5; i++) {
        const pet = await client.pets.create({ name: `Sdk search ${i}`, categoryId: 3 });
        await client.pets.profile.put(pet.id, { location: { latitude: 10 + i / 100, longitude: 20 } });
        made.push(pet.id);
      }
      const found: number[] = [];
      for await (const listing of client.listings.search({
        near: '10,20',
        radiusKm: 20,
        sort: 'distance',
        limit: 2,
      })) {
        found.push(listing.pet.id);
        assert.equal(typeof listing.distanceKm, 'number');
      }
      assert.deepEqual(found, made);
      let pages = 0;
      for await (const page of client.listings.search({ categoryId: '3', limit: 2 }).pages()) {
        pages++;
        assert.ok(page.items.length <= 2);
      }
      assert.equal(pages, 3);
    });
  });
}
