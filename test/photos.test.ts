/**
 * Pet photos through the HTTP layer, on every backend, with real images made here by sharp: upload,
 * renderings (upright, metadata stripped), bad input (not an image, a lying type, truncated, a bomb, over
 * the limits, the 21st photo), list, reorder, delete, and the keyless, immutable image URLs.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { crc32 } from 'node:zlib';
import sharp from 'sharp';
import { backends, bearer, createTestContext, type TestContext } from './helpers.js';
import { assertErrorShape, assertV1Error } from './support/assertions.js';

const noise = (width: number, height: number) =>
  sharp(randomBytes(width * height * 3), { raw: { width, height, channels: 3 } });

/** A JPEG 1200×800 as stored, meant to be shown rotated (orientation 6: 800×1200), with GPS in its EXIF. */
async function phoneJpeg(): Promise<Buffer> {
  return noise(1200, 800)
    .withExif({
      IFD0: { Make: 'PhoneCo', Model: 'Phone 1' },
      IFD3: {
        GPSLatitudeRef: 'N',
        GPSLatitude: '52/1 31/1 0/1',
        GPSLongitudeRef: 'E',
        GPSLongitude: '13/1 24/1 0/1',
      },
    })
    .withMetadata({ orientation: 6 })
    .jpeg()
    .toBuffer();
}

/** A valid PNG whose header is rewritten to declare `width`×`height` (its CRC fixed): a decompression bomb. */
async function bombPng(width: number, height: number): Promise<Buffer> {
  const png = Buffer.from(await noise(8, 8).png().toBuffer());
  png.writeUInt32BE(width, 16);
  png.writeUInt32BE(height, 20);
  png.writeUInt32BE(crc32(png.subarray(12, 29)), 29);
  return png;
}

for (const backend of await backends()) {
  describe(`photos [${backend.name}]`, () => {
    let ctx: TestContext;
    let key: string;

    before(async () => {
      ctx = await createTestContext(backend, { config: { unauthenticatedPerMinute: 3 } });
      ({ key } = await ctx.createKey({ name: 'shelter' }));
    });
    after(() => ctx.close());

    /** An image URL that names nothing: 404 photo_not_found, in the Error shape (no rate-limit headers: not counted). */
    async function assertNoPhoto(url: string, label: string): Promise<void> {
      const res = await ctx.app.inject({ url });
      assert.equal(res.statusCode, 404, label);
      assertErrorShape(res, 404, 'photo_not_found', label);
    }

    async function newPet(): Promise<number> {
      const res = await ctx.app.inject({
        method: 'POST',
        url: '/v1/pets',
        headers: bearer(key),
        payload: { name: 'Photogenic', categoryId: 1 },
      });
      return res.json().id;
    }
    const upload = (petId: number, body: Buffer, type: string, headers: Record<string, string> = {}) =>
      ctx.app.inject({
        method: 'POST',
        url: `/v1/pets/${petId}/photos`,
        headers: { ...bearer(key), 'content-type': type, ...headers },
        payload: body,
      });
    const list = async (petId: number) =>
      (await ctx.app.inject({ url: `/v1/pets/${petId}/photos`, headers: bearer(key) })).json() as {
        id: string;
        position: number;
      }[];

    test('a phone JPEG: 201, upright dimensions, WebP renderings within their sizes, no metadata left', async () => {
      const petId = await newPet();
      const original = await phoneJpeg();
      const before = await sharp(original).metadata();
      assert.equal(before.orientation, 6);
      assert.ok(before.exif && before.exif.includes(Buffer.from('PhoneCo')), 'the upload carries EXIF');
      const res = await upload(petId, original, 'image/jpeg');
      assert.equal(res.statusCode, 201, res.body);
      const photo = res.json();
      assert.match(photo.id, /^[A-Za-z0-9_-]{22}$/);
      assert.equal(photo.petId, petId);
      assert.equal(photo.position, 0);
      assert.deepEqual([photo.width, photo.height], [800, 1200]);
      assert.equal(res.headers.location, `/v1/pets/${petId}/photos/${photo.id}`);
      const bounds = { small: 100, medium: 300, large: 600, full: 1600 } as const;
      for (const [size, box] of Object.entries(bounds)) {
        assert.equal(photo.urls[size], `/v1/photos/${photo.id}/${size}.webp`);
        const file = await ctx.app.inject({ url: photo.urls[size] });
        assert.equal(file.statusCode, 200, `${size}: ${file.body}`);
        assert.equal(file.headers['content-type'], 'image/webp');
        assert.equal(file.headers['cache-control'], 'public, max-age=31536000, immutable');
        assert.equal(file.headers['x-content-type-options'], 'nosniff');
        assert.equal(file.headers['content-security-policy'], "default-src 'none'");
        const meta = await sharp(file.rawPayload).metadata();
        assert.equal(meta.format, 'webp');
        assert.ok(Math.max(meta.width!, meta.height!) <= box, `${size} fits ${box}`);
        assert.ok(meta.height! > meta.width!, `${size} is upright (portrait)`);
        assert.equal(meta.exif, undefined, `${size}: no EXIF`);
        assert.equal(meta.xmp, undefined, `${size}: no XMP`);
        assert.equal(meta.icc, undefined, `${size}: no ICC`);
        assert.equal(meta.orientation, undefined, `${size}: no orientation`);
        assert.ok(!file.rawPayload.includes(Buffer.from('PhoneCo')), 'no trace of the camera');
        const again = await ctx.app.inject({
          url: photo.urls[size],
          headers: { 'if-none-match': String(file.headers.etag) },
        });
        assert.equal(again.statusCode, 304);
      }
      const full = await sharp((await ctx.app.inject({ url: photo.urls.full })).rawPayload).metadata();
      assert.deepEqual([full.width, full.height], [800, 1200], 'full keeps the size when under 1600');
    });

    test('PNG (with alpha) and WebP are accepted; renderings fit their box', async () => {
      const petId = await newPet();
      const png = await sharp({ create: { width: 2000, height: 500, channels: 4, background: '#ff000080' } })
        .png()
        .toBuffer();
      const webp = await noise(640, 480).webp().toBuffer();
      const a = await upload(petId, png, 'image/png');
      assert.equal(a.statusCode, 201, a.body);
      assert.deepEqual([a.json().width, a.json().height], [2000, 500]);
      const full = await sharp((await ctx.app.inject({ url: a.json().urls.full })).rawPayload).metadata();
      assert.deepEqual([full.width, full.height], [1600, 400]);
      const b = await upload(petId, webp, 'image/webp');
      assert.equal(b.statusCode, 201, b.body);
      assert.equal(b.json().position, 1);
    });

    test('bad input: clear errors and nothing stored', async () => {
      const petId = await newPet();
      const jpeg = await noise(300, 200).jpeg().toBuffer();
      const png = await noise(300, 200).png().toBuffer();
      const cases: [string, Buffer, string, number, string][] = [
        [
          'not an image',
          Buffer.from('hello, this is text, not a picture'),
          'image/png',
          422,
          'invalid_image',
        ],
        ['a lying type', png, 'image/jpeg', 422, 'invalid_image'],
        ['truncated', jpeg.subarray(0, Math.floor(jpeg.length / 2)), 'image/jpeg', 422, 'invalid_image'],
        ['a bomb', await bombPng(20_000, 20_000), 'image/png', 422, 'invalid_image'],
        ['over 10 MiB', Buffer.alloc(10 * 1024 * 1024 + 1, 1), 'image/jpeg', 413, 'payload_too_large'],
        ['a GIF type', jpeg, 'image/gif', 415, 'unsupported_media_type'],
        ['JSON', Buffer.from('{"a":1}'), 'application/json', 415, 'unsupported_media_type'],
      ];
      for (const [label, body, type, status, code] of cases) {
        assertV1Error(await upload(petId, body, type), status, code, label);
      }
      const huge = await upload(petId, Buffer.alloc(10 * 1024 * 1024 + 1, 1), 'image/jpeg');
      assert.equal(huge.json().message, 'The image is larger than 10 MiB.', 'the route names its own limit');
      const bomb = await upload(petId, await bombPng(20_000, 20_000), 'image/png');
      assert.match(bomb.json().message, /megapixels|pixel/);
      assert.deepEqual(await list(petId), [], 'nothing stored');
      assertV1Error(await upload(987654321, jpeg, 'image/jpeg'), 404, 'pet_not_found', 'unknown pet');
      // A JSON body elsewhere is still limited to 16 KiB.
      const big = await ctx.app.inject({
        method: 'PUT',
        url: `/v1/pets/${petId}/profile`,
        headers: { ...bearer(key), 'content-type': 'application/json' },
        payload: JSON.stringify({ description: 'x'.repeat(20_000) }),
      });
      assertV1Error(big, 413, 'payload_too_large', 'profile body over 16 KiB');
      assertV1Error(
        await ctx.app.inject({
          method: 'PUT',
          url: `/v1/pets/${petId}/profile`,
          headers: { ...bearer(key), 'content-type': 'image/png' },
          payload: png,
        }),
        415,
        'unsupported_media_type',
        'images only on the upload',
      );
    });

    test('at most 20 photos; reorder, delete closes the gap; listing shows the primary photo', async () => {
      const petId = await newPet();
      const small = await noise(40, 30).jpeg().toBuffer();
      for (let i = 0; i < 20; i++) assert.equal((await upload(petId, small, 'image/jpeg')).statusCode, 201);
      assertV1Error(await upload(petId, small, 'image/jpeg'), 409, 'photo_limit', '21st');
      let photos = await list(petId);
      assert.deepEqual(
        photos.map((p) => p.position),
        [...Array(20).keys()],
      );
      const last = photos[19]!.id;
      const moved = await ctx.app.inject({
        method: 'PATCH',
        url: `/v1/pets/${petId}/photos/${last}`,
        headers: bearer(key),
        payload: { position: 0 },
      });
      assert.equal(moved.statusCode, 200, moved.body);
      assert.equal(moved.json().position, 0);
      const order = (await list(petId)).map((p) => p.id);
      assert.deepEqual(order, [last, ...photos.slice(0, 19).map((p) => p.id)]);
      assertV1Error(
        await ctx.app.inject({
          method: 'PATCH',
          url: `/v1/pets/${petId}/photos/${last}`,
          headers: bearer(key),
          payload: { position: 20 },
        }),
        400,
        'validation_failed',
        'past the end',
      );
      const gone = order[5]!;
      const del = await ctx.app.inject({
        method: 'DELETE',
        url: `/v1/pets/${petId}/photos/${gone}`,
        headers: bearer(key),
      });
      assert.equal(del.statusCode, 204);
      photos = await list(petId);
      assert.deepEqual(
        photos.map((p) => p.id),
        order.filter((id) => id !== gone),
      );
      assert.deepEqual(
        photos.map((p) => p.position),
        [...Array(19).keys()],
      );
      await assertNoPhoto(`/v1/photos/${gone}/small.webp`, 'gone');
      // A rendering served just before its photo is deleted (so kept in memory) is gone with it too.
      const served = await ctx.app.inject({ url: `/v1/photos/${order[1]}/medium.webp` });
      assert.equal(served.statusCode, 200);
      const removed = await ctx.app.inject({
        method: 'DELETE',
        url: `/v1/pets/${petId}/photos/${order[1]}`,
        headers: bearer(key),
      });
      assert.equal(removed.statusCode, 204);
      await assertNoPhoto(`/v1/photos/${order[1]}/medium.webp`, 'served, then deleted');
      const search = await ctx.app.inject({
        url: '/v1/listings?hasPhotos=true&limit=100',
        headers: bearer(key),
      });
      const mine = search.json().find((l: { pet: { id: number } }) => l.pet.id === petId);
      assert.equal(mine.primaryPhoto.id, last);
      // Deleting the pet deletes its photos.
      await ctx.app.inject({ method: 'DELETE', url: `/v1/pets/${petId}`, headers: bearer(key) });
      await assertNoPhoto(`/v1/photos/${last}/small.webp`, 'x');
    });

    test('image URLs need no key and are not counted by address; uploads are idempotent', async () => {
      const petId = await newPet();
      const jpeg = await noise(60, 60).jpeg().toBuffer();
      const first = await upload(petId, jpeg, 'image/jpeg', { 'idempotency-key': 'photo-1' });
      const again = await upload(petId, jpeg, 'image/jpeg', { 'idempotency-key': 'photo-1' });
      assert.equal(again.statusCode, 201);
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.deepEqual(again.json(), first.json());
      assert.equal((await list(petId)).length, 1, 'stored once');
      // The keyless limit is 3 a minute here: images are outside it.
      for (let i = 0; i < 8; i++) {
        const res = await ctx.app.inject({ url: first.json().urls.small });
        assert.equal(res.statusCode, 200, `request ${i}`);
        assert.equal(res.headers['x-ratelimit-limit'], undefined);
      }
      await assertNoPhoto('/v1/photos/short/small.webp', 'bad id');
      await assertNoPhoto(`/v1/photos/${first.json().id}/huge.webp`, 'bad size');
    });

    test('the API keeps answering while a photo is processed (the image work is off the event loop)', async () => {
      const petId = await newPet();
      const big = await noise(3000, 3000).jpeg({ quality: 95 }).toBuffer();
      const finished: string[] = [];
      const uploading = upload(petId, big, 'image/jpeg').then((res) => {
        finished.push('upload');
        return res;
      });
      // Let the upload reach the image work, then ask for something else.
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
      const health = await ctx.app.inject({ url: '/healthz' });
      finished.push('health');
      assert.equal(health.statusCode, 200);
      assert.equal((await uploading).statusCode, 201);
      assert.deepEqual(finished, ['health', 'upload']);
    });
  });
}
