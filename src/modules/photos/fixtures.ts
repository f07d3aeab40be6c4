import assert from 'node:assert/strict';
import sharp from 'sharp';
import { defineFixture, type FixtureContext } from '../fixtures.js';

const JPEG = sharp({ create: { width: 32, height: 24, channels: 3, background: '#804020' } })
  .jpeg()
  .toBuffer();

/**
 * A photo of the shared pet; for a deletion (made fresh), of the pet just made for the same request: the
 * newest pet, since ids of one request's path are made in order.
 */
async function newPhoto(ctx: FixtureContext, operationId?: string): Promise<string> {
  let petId = await ctx.id('petId');
  if (operationId === 'deletePetPhoto') {
    const newest = await ctx.app.inject({
      url: '/v1/listings?sort=newest&limit=1&status=available,pending,sold',
      headers: { authorization: `Bearer ${ctx.key}` },
    });
    petId = String((newest.json() as { pet: { id: number } }[])[0]!.pet.id);
  }
  const res = await ctx.app.inject({
    method: 'POST',
    url: `/v1/pets/${petId}/photos`,
    headers: { authorization: `Bearer ${ctx.key}`, 'content-type': 'image/jpeg' },
    payload: await JPEG,
  });
  assert.equal(res.statusCode, 201, res.body);
  return (res.json() as { id: string }).id;
}

export default defineFixture({
  driftStatuses: {
    addPetPhoto: [201, 404, 415, 422],
    listPetPhotos: [200, 404],
    movePetPhoto: [200, 400],
    deletePetPhoto: [204, 404],
    getPhotoFile: [200, 304, 404],
  },
  bodies: {
    // The upload's body is the image itself (its requests carry `content-type: image/jpeg`).
    addPetPhoto: () => JPEG,
    movePetPhoto: () => ({ position: 0 }),
  },
  ids: {
    photoId: newPhoto,
    // The public image URL's last segment.
    file: () => Promise.resolve('small.webp'),
  },
  // A deletion uses its photo up.
  fresh: ['deletePetPhoto'],
  // The renderings are public by design: unguessable ids, immutable bytes an <img> loads without a key.
  keyless: ['getPhotoFile'],
  conditionalHeaders: {
    'addPetPhoto 201': ['idempotent-replayed'],
    'movePetPhoto 200': ['idempotent-replayed'],
    'deletePetPhoto 204': ['idempotent-replayed'],
  },
  async drift({ app, call, auth }) {
    const pet = await app.inject({
      method: 'POST',
      url: '/v1/pets',
      headers: auth(),
      payload: { name: 'Catalogued', categoryId: 1 },
    });
    const image = await sharp({ create: { width: 40, height: 30, channels: 3, background: '#336699' } })
      .png()
      .toBuffer();
    const photos = `/v1/pets/${(pet.json() as { id: number }).id}/photos`;
    const upload = (label: string, url: string, type: string, payload: Buffer) =>
      call(label, { method: 'POST', url, headers: { ...auth(), 'content-type': type }, payload });
    const photo = (await upload('upload', photos, 'image/png', image)).json() as {
      id: string;
      urls: { medium: string };
    };
    await upload('upload, unknown pet', '/v1/pets/987654321/photos', 'image/png', image);
    await upload('upload, lying type', photos, 'image/jpeg', image);
    await upload('upload, not an image type', photos, 'text/csv', Buffer.from('a,b'));
    await call('photos', { url: photos, headers: auth() });
    await call('photos, unknown pet', { url: '/v1/pets/987654321/photos', headers: auth() });
    const one = `${photos}/${photo.id}`;
    await call('move', { method: 'PATCH', url: one, headers: auth(), payload: { position: 0 } });
    await call('bad move', { method: 'PATCH', url: one, headers: auth(), payload: { position: 5 } });
    await call('image', { url: photo.urls.medium });
    await call('image 304', {
      url: photo.urls.medium,
      headers: { 'if-none-match': `"${photo.id}.medium"` },
    });
    await call('delete photo', { method: 'DELETE', url: one, headers: auth() });
    await call('delete photo again', { method: 'DELETE', url: one, headers: auth() });
    await call('image gone', { url: photo.urls.medium });
  },
});
