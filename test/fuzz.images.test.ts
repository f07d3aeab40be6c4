/**
 * Property-based tests of the image header decoder (src/modules/photos/image.ts) and the upload behind it:
 * PNG, JPEG and WebP (lossy, lossless and extended) whose headers declare random dimensions (0, the edges
 * around 16,384 and 50 megapixels, up to 2^32 - 1), with their checksums fixed or not, random bytes
 * overwritten, cut short, or sent under another image type; and real strips up to 100,000 pixels long,
 * either way round. Whatever arrives: never a 5xx, never a photo
 * past the limits, every error the Error shape, and each answer in bounded time (fast-check's timeout).
 *
 * Seeded like test/fuzz.test.ts (FUZZ_SEED, FUZZ_RUNS).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { crc32 } from 'node:zlib';
import fc from 'fast-check';
import sharp from 'sharp';
import { ApiError } from '../src/http/errors.js';
import {
  MAX_PIXELS,
  MAX_SIDE,
  PHOTO_TYPES,
  readHeader,
  type PhotoType,
} from '../src/modules/photos/image.js';
import { bearer, createTestContext, sqliteMemory, type TestContext } from './helpers.js';
import { assertWellFormed, RUNS, SEED, SETTINGS, TEST_TIMEOUT } from './support/fuzz.js';

type Kind = 'png' | 'jpeg' | 'webp-lossy' | 'webp-lossless' | 'webp-extended';
const TYPE_OF: Record<Kind, PhotoType> = {
  png: 'image/png',
  jpeg: 'image/jpeg',
  'webp-lossy': 'image/webp',
  'webp-lossless': 'image/webp',
  'webp-extended': 'image/webp',
};

const noise = () => sharp(randomBytes(16 * 12 * 3), { raw: { width: 16, height: 12, channels: 3 } });
const samples: Record<Kind, Buffer> = {
  png: await noise().png().toBuffer(),
  jpeg: await noise().jpeg().toBuffer(),
  'webp-lossy': await noise().webp().toBuffer(),
  'webp-lossless': await noise().webp({ lossless: true }).toBuffer(),
  'webp-extended': await noise()
    .withExif({ IFD0: { Make: 'PhoneCo' } })
    .webp()
    .toBuffer(),
};

/** Writes `width`×`height` where the format's header keeps them (as many bits as it has room for). */
function declare(kind: Kind, source: Buffer, width: number, height: number, fixChecksum: boolean): Buffer {
  const out = Buffer.from(source);
  switch (kind) {
    case 'png':
      out.writeUInt32BE(width >>> 0, 16);
      out.writeUInt32BE(height >>> 0, 20);
      if (fixChecksum) out.writeUInt32BE(crc32(out.subarray(12, 29)), 29);
      break;
    case 'jpeg': {
      // The frame header (SOF0..SOF2): precision, then height and width, 16 bits each.
      for (let at = 2; at + 9 < out.length; at++) {
        if (out[at] === 0xff && out[at + 1]! >= 0xc0 && out[at + 1]! <= 0xc2) {
          out.writeUInt16BE(height & 0xffff, at + 5);
          out.writeUInt16BE(width & 0xffff, at + 7);
          break;
        }
      }
      break;
    }
    case 'webp-lossy':
      // VP8 key frame: 14-bit width and height after the start code, little-endian.
      out.writeUInt16LE(width & 0x3fff, 26);
      out.writeUInt16LE(height & 0x3fff, 28);
      break;
    case 'webp-lossless': {
      // VP8L: after the signature byte, 14 bits width - 1 and 14 bits height - 1.
      const bits = out.readUInt32LE(21);
      const packed = (((width - 1) & 0x3fff) | (((height - 1) & 0x3fff) << 14) | (bits & 0xf0000000)) >>> 0;
      out.writeUInt32LE(packed, 21);
      break;
    }
    case 'webp-extended':
      // VP8X canvas: 24 bits width - 1 and 24 bits height - 1.
      out.writeUIntLE((width - 1) & 0xffffff, 24, 3);
      out.writeUIntLE((height - 1) & 0xffffff, 27, 3);
      break;
  }
  return out;
}

const side = fc.oneof(
  fc.integer({ min: 0, max: 70_000 }),
  fc.constantFrom(0, 1, 2, 3_051, 3_052, 7_071, 7_072, 16_383, 16_384, 16_385, 65_535, 65_536),
  fc.constantFrom(2 ** 24, 2 ** 24 + 1, 50_000_000, 2 ** 31 - 1, 2 ** 32 - 1),
);
const upload = fc.record({
  kind: fc.constantFrom<Kind>('png', 'jpeg', 'webp-lossy', 'webp-lossless', 'webp-extended'),
  width: side,
  height: side,
  fixChecksum: fc.boolean(),
  mutations: fc.array(fc.record({ at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }), { maxLength: 6 }),
  cut: fc.option(fc.nat(), { nil: undefined }),
  claimed: fc.option(fc.constantFrom<PhotoType>('image/jpeg', 'image/png', 'image/webp'), { nil: undefined }),
});
type Upload = typeof upload extends fc.Arbitrary<infer T> ? T : never;
/** Images that really are this shape: strips up to 100,000 pixels long, either way round, in every format. */
const strip = fc.record({
  long: fc.oneof(fc.integer({ min: 1, max: 100_000 }), fc.constantFrom(16_383, 16_384, 16_385, 100_001)),
  short: fc.integer({ min: 1, max: 3 }),
  tall: fc.boolean(),
  format: fc.constantFrom('png', 'jpeg', 'webp'),
});
type Strip = typeof strip extends fc.Arbitrary<infer T> ? T : never;

async function stripOf(s: Strip): Promise<{ body: Buffer; type: PhotoType; label: string }> {
  const [width, height] = s.tall ? [s.short, s.long] : [s.long, s.short];
  const create = { width, height, channels: 3 as const, background: '#808080' };
  const image = sharp({ create, limitInputPixels: false });
  // Encoders have their own limits (WebP 16,383, JPEG 65,535 a side): past them the strip is sent as a PNG.
  const format =
    s.long > (s.format === 'webp' ? 16_383 : s.format === 'jpeg' ? 65_535 : Infinity) ? 'png' : s.format;
  const body = await (
    format === 'png' ? image.png() : format === 'jpeg' ? image.jpeg() : image.webp()
  ).toBuffer();
  return { body, type: `image/${format}` as PhotoType, label: `${width}×${height} ${format}` };
}

function bodyOf(u: Upload): { body: Buffer; type: PhotoType } {
  const body = declare(u.kind, samples[u.kind], u.width, u.height, u.fixChecksum);
  for (const { at, byte } of u.mutations) body[at % body.length] = byte;
  const cut = u.cut === undefined ? body : body.subarray(0, u.cut % (body.length + 1));
  return { body: cut, type: u.claimed ?? TYPE_OF[u.kind] };
}

const withinLimits = (width: number, height: number) =>
  width >= 1 && height >= 1 && width <= MAX_SIDE && height <= MAX_SIDE && width * height <= MAX_PIXELS;

describe(`image headers, fuzzed (seed ${SEED}, ${RUNS} runs)`, () => {
  test(
    'readHeader accepts only what is within the limits, and refuses with 422 invalid_image',
    { timeout: TEST_TIMEOUT },
    async () => {
      await fc.assert(
        fc.asyncProperty(upload, async (u) => {
          const { body, type } = bodyOf(u);
          try {
            const header = await readHeader(body, type);
            assert.ok(withinLimits(header.width, header.height), `${header.width}×${header.height} accepted`);
            assert.ok(header.decodedBytes <= MAX_PIXELS * 8, 'its cost is bounded');
          } catch (error) {
            assert.ok(error instanceof ApiError, `not an ApiError: ${String(error)}`);
            assert.equal(error.code, 'invalid_image');
            assert.equal(error.status, 422);
          }
        }),
        SETTINGS,
      );
    },
  );

  describe('through the upload route', () => {
    let ctx: TestContext;
    let key: string;
    let petId: number;
    before(async () => {
      ctx = await createTestContext(sqliteMemory);
      ({ key } = await ctx.createKey({ name: 'fuzzer' }));
      const pet = await ctx.app.inject({
        method: 'POST',
        url: '/v1/pets',
        headers: bearer(key),
        payload: { name: 'Target', categoryId: 1 },
      });
      petId = pet.json().id;
    });
    after(() => ctx.close());

    test('never a 5xx, never a photo past the limits', { timeout: TEST_TIMEOUT * 2 }, async () => {
      const statuses = new Map<number, number>();
      await fc.assert(
        fc.asyncProperty(fc.oneof(upload, strip), async (u) => {
          const { body, type, label } =
            'long' in u ? await stripOf(u) : { ...bodyOf(u), label: `${u.kind} ${u.width}×${u.height}` };
          const res = await ctx.app.inject({
            method: 'POST',
            url: `/v1/pets/${petId}/photos`,
            headers: { ...bearer(key), 'content-type': type },
            payload: body,
          });
          statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
          assertWellFormed(res, `${label} as ${type}`);
          assert.ok([201, 409, 422].includes(res.statusCode), `${res.statusCode} ${res.body}`);
          if (res.statusCode === 201) {
            const photo = res.json();
            assert.ok(withinLimits(photo.width, photo.height), `${photo.width}×${photo.height} stored`);
            // Room for the next: a pet holds at most 20.
            await ctx.app.inject({
              method: 'DELETE',
              url: `/v1/pets/${petId}/photos/${photo.id}`,
              headers: bearer(key),
            });
          }
        }),
        SETTINGS,
      );
      assert.ok((statuses.get(422) ?? 0) > 0, `some refused: ${JSON.stringify([...statuses])}`);
      assert.ok((statuses.get(201) ?? 0) > 0, `some accepted: ${JSON.stringify([...statuses])}`);
    });
  });

  test('the declared types are the only ones', () => {
    assert.deepEqual(Object.keys(PHOTO_TYPES).sort(), ['image/jpeg', 'image/png', 'image/webp']);
  });
});
