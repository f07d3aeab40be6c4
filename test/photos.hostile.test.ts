/**
 * Photos against a hostile or careless client, on every backend: sides past 16,384 px refused from the
 * header, rows that break the read schema left out of pages (and repaired by their migration), 415 naming
 * the image types, conditional requests on photos that are gone, no GPS or camera metadata in any stored
 * copy, replays without a decode, and the decode budget's 503.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { readdirSync, readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { crc32 } from 'node:zlib';
import sharp from 'sharp';
import type { PostgresDatabase } from '../src/db/postgres.js';
import type { SqliteDatabase } from '../src/db/sqlite.js';
import { photoRepository } from '../src/modules/photos/repository.js';
import type { PhotoSize } from '../src/modules/photos/schemas.js';
import { backends, bearer, createTestContext, type TestContext } from './helpers.js';
import { assertErrorShape, assertV1Error } from './support/assertions.js';

const noise = (width: number, height: number) =>
  sharp(randomBytes(width * height * 3), { raw: { width, height, channels: 3 } });

/** A valid PNG whose header is rewritten to declare `width`×`height` (its CRC fixed). */
async function declaredPng(width: number, height: number): Promise<Buffer> {
  const png = Buffer.from(await noise(8, 8).png().toBuffer());
  png.writeUInt32BE(width, 16);
  png.writeUInt32BE(height, 20);
  png.writeUInt32BE(crc32(png.subarray(12, 29)), 29);
  return png;
}

const GPS = {
  IFD0: { Make: 'PhoneCo', Model: 'Phone 1' },
  IFD3: {
    GPSLatitudeRef: 'N',
    GPSLatitude: '52/1 31/1 0/1',
    GPSLongitudeRef: 'E',
    GPSLongitude: '13/1 24/1 0/1',
  },
};

/**
 * Whether an image names the camera (anywhere in its bytes) or has an EXIF block pointing to a GPS directory
 * (tag 0x8825, either byte order). The tag's four bytes are looked for in the EXIF block only: in a whole file
 * of compressed noise they turn up by chance (about once in a few thousand runs of this suite).
 */
async function tellsTooMuch(bytes: Buffer): Promise<boolean> {
  if (bytes.includes('PhoneCo') || bytes.includes('Phone 1')) return true;
  const { exif } = await sharp(bytes).metadata();
  return (
    exif !== undefined &&
    (exif.includes(Buffer.from([0x88, 0x25, 0x00, 0x04])) ||
      exif.includes(Buffer.from([0x25, 0x88, 0x04, 0x00])))
  );
}

const MIGRATION = (kind: string) => {
  const dir = new URL(`../src/db/migrations/${kind}/`, import.meta.url);
  const file = readdirSync(dir).find((name) => name.endsWith('_photo_limits.sql'))!;
  return readFileSync(new URL(file, dir), 'utf8');
};

for (const backend of await backends()) {
  describe(`photos against hostile input [${backend.name}]`, () => {
    let ctx: TestContext;
    let key: string;

    before(async () => {
      ctx = await createTestContext(backend);
      ({ key } = await ctx.createKey({ name: 'shelter' }));
    });
    after(() => ctx.close());

    async function newPet(): Promise<number> {
      const res = await ctx.app.inject({
        method: 'POST',
        url: '/v1/pets',
        headers: bearer(key),
        payload: { name: 'Photogenic', categoryId: 1 },
      });
      return res.json().id;
    }
    const upload = (
      petId: number,
      body: Buffer | string,
      type?: string,
      headers: Record<string, string> = {},
    ) =>
      ctx.app.inject({
        method: 'POST',
        url: `/v1/pets/${petId}/photos`,
        headers: { ...bearer(key), ...(type === undefined ? {} : { 'content-type': type }), ...headers },
        payload: body,
      });
    /** Runs SQL on the context's database, whichever backend it is. */
    async function sql(text: string, values: unknown[] = []): Promise<void> {
      if (ctx.database.kind === 'sqlite') (ctx.database as SqliteDatabase).db.prepare(text).run(...values);
      else {
        let n = 0;
        await (ctx.database as PostgresDatabase).execute({
          text: text.replace(/\?/g, () => `$${++n}`),
          values,
        });
      }
    }
    /** Runs a migration script as the migrator does. */
    async function script(text: string): Promise<void> {
      if (ctx.database.kind === 'sqlite') (ctx.database as SqliteDatabase).db.exec(text);
      else await (ctx.database as PostgresDatabase).execute({ text });
    }
    const stored = (photoId: string, size: string) =>
      ctx.database.repository(photoRepository).file(photoId, size as PhotoSize);

    test('415 for every body that is not an image, naming the accepted types', async () => {
      const petId = await newPet();
      const jpeg = await noise(40, 30).jpeg().toBuffer();
      const cases: [string, Buffer | string, string | undefined][] = [
        ['GIF', jpeg, 'image/gif'],
        ['HTML', '<h1>hi</h1>', 'text/html'],
        [
          'multipart',
          '--x\r\nContent-Disposition: form-data; name="f"\r\n\r\nx\r\n--x--',
          'multipart/form-data; boundary=x',
        ],
        ['SVG', '<svg/>', 'image/svg+xml'],
        ['JSON', '{"a":1}', 'application/json'],
        ['no type', jpeg, undefined],
        ['a type with parameters only', jpeg, ';charset=utf-8'],
      ];
      for (const [label, body, type] of cases) {
        const res = await upload(petId, body, type);
        assertV1Error(res, 415, 'unsupported_media_type', label);
        assert.match(res.json().message, /image\/jpeg, image\/png or image\/webp/, label);
      }
      // The type's parameters and case do not matter.
      const res = await upload(petId, jpeg, 'Image/JPEG; q=1');
      assert.equal(res.statusCode, 201, res.body);
    });

    test('each side at most 16,384 px and at most 50 megapixels, from the header; the edge is accepted', async () => {
      const petId = await newPet();
      const refused: [number, number, RegExp][] = [
        [16_385, 1, /16384 pixels/],
        [1, 16_385, /16384 pixels/],
        [100_001, 1, /16384 pixels/],
        [50_000_000, 1, /16384 pixels/],
        [16_384, 3_052, /50 megapixels/],
        [2 ** 31 - 1, 2 ** 31 - 1, /./],
      ];
      for (const [width, height, message] of refused) {
        const res = await upload(petId, await declaredPng(width, height), 'image/png');
        assertV1Error(res, 422, 'invalid_image', `${width}×${height}`);
        assert.match(res.json().message, message, `${width}×${height}`);
      }
      const edges: [number, number][] = [
        [16_384, 1],
        [1, 16_384],
      ];
      for (const [width, height] of edges) {
        const png = await sharp({ create: { width, height, channels: 3, background: '#808080' } })
          .png()
          .toBuffer();
        const res = await upload(petId, png, 'image/png');
        assert.equal(res.statusCode, 201, res.body);
        assert.deepEqual([res.json().width, res.json().height], [width, height]);
      }
      const list = await ctx.app.inject({ url: `/v1/pets/${petId}/photos`, headers: bearer(key) });
      assert.equal(list.statusCode, 200, list.body);
      assert.equal(list.json().length, 2);
    });

    test('a stored row past the limits leaves pages whole; its migration deletes it and closes the gap', async () => {
      const petId = await newPet();
      const good = await upload(petId, await noise(60, 40).jpeg().toBuffer(), 'image/jpeg');
      assert.equal(good.statusCode, 201, good.body);
      const bad = randomBytes(16).toString('base64url');
      // As an upload before the limits were checked could store it: ahead of the good one, 100,001 px wide.
      await sql('UPDATE pet_photos SET position = 1 WHERE id = ?', [good.json().id]);
      await sql(
        'INSERT INTO pet_photos (id, pet_id, position, width, height, created_at) VALUES (?, ?, 0, ?, 1, ?)',
        [bad, petId, 100_001, Date.now()],
      );
      await sql("INSERT INTO pet_photo_files (photo_id, size, bytes) VALUES (?, 'small', ?)", [
        bad,
        Buffer.from('x'),
      ]);
      const photos = await ctx.app.inject({ url: `/v1/pets/${petId}/photos`, headers: bearer(key) });
      assert.equal(photos.statusCode, 200, photos.body);
      assert.deepEqual(
        photos.json().map((p: { id: string }) => p.id),
        [good.json().id],
      );
      const page = await ctx.app.inject({
        url: '/v1/listings?hasPhotos=true&limit=100',
        headers: bearer(key),
      });
      assert.equal(page.statusCode, 200, page.body);
      const mine = page.json().find((l: { pet: { id: number } }) => l.pet.id === petId);
      assert.equal(mine.primaryPhoto, null, 'the bad primary photo is left out, not the page');

      await script(MIGRATION(ctx.database.kind));
      const repaired = await ctx.app.inject({ url: `/v1/pets/${petId}/photos`, headers: bearer(key) });
      assert.deepEqual(
        repaired.json().map((p: { id: string; position: number }) => [p.id, p.position]),
        [[good.json().id, 0]],
      );
      assert.equal(await stored(bad, 'small'), undefined, 'its files went with it');
      const listed = await ctx.app.inject({
        url: '/v1/listings?hasPhotos=true&limit=100',
        headers: bearer(key),
      });
      const after = listed.json().find((l: { pet: { id: number } }) => l.pet.id === petId);
      assert.equal(after.primaryPhoto.id, good.json().id);
    });

    test('If-None-Match on a photo that is not there is a 404 without validators; on one that is, a 304', async () => {
      const petId = await newPet();
      const res = await upload(petId, await noise(50, 50).jpeg().toBuffer(), 'image/jpeg');
      const photo = res.json();
      const url = photo.urls.small;
      const current = await ctx.app.inject({ url, headers: { 'if-none-match': '*' } });
      assert.equal(current.statusCode, 304, '`*` matches a current representation');
      assert.equal(current.headers.etag, `"${photo.id}.small"`);
      const assertGone = async (target: string, headers: Record<string, string>, label: string) => {
        const gone = await ctx.app.inject({ url: target, headers });
        assertErrorShape(gone, 404, 'photo_not_found', label);
        assert.equal(gone.headers.etag, undefined, `${label}: no ETag`);
        assert.doesNotMatch(
          String(gone.headers['cache-control']),
          /immutable|max-age/,
          `${label}: not cached`,
        );
      };
      const unknown = `/v1/photos/${randomBytes(16).toString('base64url')}/small.webp`;
      await assertGone(unknown, { 'if-none-match': '*' }, 'unknown, *');
      await assertGone(unknown, { 'if-none-match': '"made-up"' }, 'unknown, a made-up tag');
      await ctx.app.inject({
        method: 'DELETE',
        url: `/v1/pets/${petId}/photos/${photo.id}`,
        headers: bearer(key),
      });
      await assertGone(url, {}, 'deleted');
      await assertGone(url, { 'if-none-match': `"${photo.id}.small"` }, 'deleted, its own tag');
      await assertGone(url, { 'if-none-match': '*' }, 'deleted, *');
      // Another resource, the same rule.
      const pet = await ctx.app.inject({
        url: '/v1/pets/987654321',
        headers: { ...bearer(key), 'if-none-match': '*' },
      });
      assertV1Error(pet, 404, 'pet_not_found', 'an unknown pet, *');
      assert.equal(pet.headers.etag, undefined);
      const profile = await ctx.app.inject({
        url: '/v1/pets/987654321/profile',
        headers: { ...bearer(key), 'if-none-match': '*' },
      });
      assert.equal(profile.statusCode, 404, profile.body);
      assert.equal(profile.headers.etag, undefined);
    });

    test('no stored copy keeps GPS or camera metadata, whatever the format; a JPEG original keeps its orientation', async () => {
      const petId = await newPet();
      const uploads: [string, Buffer][] = [
        [
          'image/jpeg',
          await noise(300, 200).withExif(GPS).withMetadata({ orientation: 6 }).jpeg().toBuffer(),
        ],
        ['image/png', await noise(300, 200).withExif(GPS).png().toBuffer()],
        ['image/webp', await noise(300, 200).withExif(GPS).webp().toBuffer()],
      ];
      for (const [type, body] of uploads) {
        assert.ok(await tellsTooMuch(body), `${type}: the upload carries the camera and GPS`);
        const res = await upload(petId, body, type);
        assert.equal(res.statusCode, 201, res.body);
        for (const size of ['original', 'small', 'medium', 'large', 'full']) {
          const bytes = await stored(res.json().id, size);
          assert.ok(bytes, `${type} ${size} stored`);
          assert.ok(!(await tellsTooMuch(bytes)), `${type} ${size}: no camera, no GPS`);
          const meta = await sharp(bytes).metadata();
          assert.equal(meta.xmp, undefined, `${type} ${size}: no XMP`);
          assert.equal(meta.icc, undefined, `${type} ${size}: no ICC`);
          if (size === 'original')
            assert.equal(meta.format, type.slice(6), `${type}: the original keeps its format`);
        }
        if (type === 'image/jpeg') {
          const original = await sharp(await stored(res.json().id, 'original')).metadata();
          assert.equal(original.orientation, 6, 'shown upright as the upload was');
          assert.deepEqual([res.json().width, res.json().height], [200, 300]);
        }
      }
    });

    test('an idempotent replay answers without decoding the image again', async () => {
      const petId = await newPet();
      const decodes: unknown[] = [];
      const count = (message: unknown) => decodes.push(message);
      subscribe('pet-adoption:photos:decode', count);
      try {
        const jpeg = await noise(400, 300).jpeg().toBuffer();
        const headers = { 'idempotency-key': `photo-${randomBytes(4).toString('hex')}` };
        const first = await upload(petId, jpeg, 'image/jpeg', headers);
        assert.equal(first.statusCode, 201, first.body);
        assert.equal(decodes.length, 1);
        const again = await upload(petId, jpeg, 'image/jpeg', headers);
        assert.equal(again.statusCode, 201);
        assert.equal(again.headers['idempotent-replayed'], 'true');
        assert.deepEqual(again.json(), first.json());
        assert.equal(decodes.length, 1, 'the replay decoded nothing');
        const other = await upload(petId, await noise(40, 30).jpeg().toBuffer(), 'image/jpeg', headers);
        assertV1Error(other, 422, 'idempotency_key_reused', 'another body, same key');
        assert.equal(decodes.length, 1, 'nor did the refusal');
      } finally {
        unsubscribe('pet-adoption:photos:decode', count);
      }
    });
  });
}
