/**
 * Property-based tests of searchListings' decoders: the query string parser (every parameter, hostile values
 * of any length, numbers such as 1e-300, -0, NaN, Infinity, repeated parameters), the rings a search by
 * distance reads whatever its cursor holds, and the route itself on every backend: 200 or 400, well-formed,
 * promptly.
 *
 * Seeded like test/fuzz.test.ts (FUZZ_SEED, FUZZ_RUNS).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { Cursors } from '../src/http/cursors.js';
import { ApiError } from '../src/http/errors.js';
import { parseListingQuery, type ListingQuery } from '../src/modules/listings/query.js';
import { MAX_RINGS, nextRing, type Ring } from '../src/modules/listings/search-sql.js';
import { backends, bearer, createTestContext, type TestContext } from './helpers.js';
import { assertWellFormed, SETTINGS, StatusTally, TEST_TIMEOUT } from './support/fuzz.js';
import { EXTREME_NUMBERS } from './support/lists.js';

const PROMPT_MS = 1000;
const cursors = new Cursors('s'.repeat(32));

const numberText = fc.oneof(
  fc.double().map(String),
  fc.constantFrom(...EXTREME_NUMBERS).map(String),
  fc.integer({ min: -1000, max: 1000 }).map(String),
  fc.constantFrom(
    '1e-300',
    '5e-324',
    '-0',
    '-0.0',
    'NaN',
    'Infinity',
    '-Infinity',
    '0x10',
    '1_0',
    ' 5',
    '1.',
    '.5',
  ),
  fc.nat({ max: 400 }).map((n) => `0.${'0'.repeat(n)}1`),
  fc.nat({ max: 400 }).map((n) => `1${'0'.repeat(n)}`),
);
const hostile = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.nat({ max: 20_000 }).map((n) => 'a,'.repeat(n)),
  fc.nat({ max: 20_000 }).map((n) => ' '.repeat(n) + 'x'),
  fc.nat({ max: 5_000 }).map((n) => '1,'.repeat(n) + '1'),
  fc.nat({ max: 5_000 }).map((n) => 'ａ'.repeat(n)),
);
const VALUES: Record<string, fc.Arbitrary<string>> = {
  status: fc.oneof(fc.constantFrom('available', 'pending,sold', 'available,available', ''), hostile),
  categoryId: fc.oneof(
    fc.array(numberText, { maxLength: 5 }).map((a) => a.join(',')),
    hostile,
  ),
  sex: fc.oneof(fc.constantFrom('female', 'male,unknown'), hostile),
  ageGroup: fc.oneof(fc.constantFrom('baby', 'young,adult'), hostile),
  size: fc.oneof(fc.constantFrom('small', 'xlarge'), hostile),
  goodWithChildren: fc.oneof(fc.constantFrom('true', 'false', 'TRUE', '1'), hostile),
  houseTrained: fc.oneof(fc.constantFrom('true', 'false'), hostile),
  hasPhotos: fc.oneof(fc.constantFrom('true', 'false'), hostile),
  q: fc.oneof(fc.constantFrom('rex', 'ｒｅｘ', 'a b c d e f g h i j k', '"', '*'), hostile),
  near: fc.oneof(
    fc.tuple(numberText, numberText).map(([a, b]) => `${a},${b}`),
    fc.constantFrom('52.52,13.405', '90,180', '-90,-180', '0,0', '1', ',', '1,2,3'),
    hostile,
  ),
  radiusKm: fc.oneof(numberText, hostile),
  sort: fc.oneof(fc.constantFrom('newest', 'oldest', 'distance', 'name', 'relevance'), hostile),
  limit: fc.oneof(numberText, hostile),
  cursor: fc.oneof(hostile, fc.constant('WyJkaXN0YW5jZSIsMSwxMCwxZS0zMDBd')),
  colour: hostile,
};
const rawQuery = fc.dictionary(
  fc.constantFrom(...Object.keys(VALUES)),
  fc
    .constantFrom(...Object.keys(VALUES))
    .chain((name) =>
      fc.oneof(
        { arbitrary: VALUES[name]!, weight: 4 },
        fc.array(VALUES[name]!, { minLength: 2, maxLength: 3 }),
      ),
    ),
  { maxKeys: 6 },
);

function assertBounded(query: ListingQuery): void {
  const finite = (n: number, min: number, max: number) =>
    assert.ok(Number.isFinite(n) && n >= min && n <= max, `${n} in ${min}..${max}`);
  finite(query.limit, 1, 100);
  if (query.near) {
    finite(query.near.latitude, -90, 90);
    finite(query.near.longitude, -180, 180);
    finite(query.near.radiusKm, 1, 500);
  }
  for (const id of query.categoryId ?? []) assert.ok(Number.isSafeInteger(id) && id >= 1);
  assert.ok((query.words?.length ?? 0) <= 10);
  assert.ok(query.status.length <= 3);
}

describe('the listings query decoder', () => {
  test('any query string: a bounded query or a 400, in bounded time', () => {
    let slowest = 0;
    fc.assert(
      fc.property(rawQuery, (raw) => {
        const started = performance.now();
        try {
          assertBounded(parseListingQuery(raw, cursors));
        } catch (error) {
          assert.ok(error instanceof ApiError, String(error));
          assert.equal(error.status, 400);
          assert.ok(['validation_failed', 'invalid_cursor'].includes(error.code), error.code);
        }
        slowest = Math.max(slowest, performance.now() - started);
      }),
      SETTINGS,
    );
    assert.ok(slowest < 100, `slowest parse ${slowest.toFixed(1)} ms`);
  });

  test('a value longer than its schema states is refused before it is read', () => {
    for (const [name, value] of [
      ['q', 'a '.repeat(101)],
      ['categoryId', '1,'.repeat(100) + '1'],
      ['status', 'available,'.repeat(21)],
      ['near', `52.${'5'.repeat(60)},13`],
    ] as const) {
      assert.throws(
        () => parseListingQuery({ [name]: value }, cursors),
        (error: unknown) =>
          error instanceof ApiError &&
          error.code === 'validation_failed' &&
          error.details?.some((d) => d.field === name && /at most/.test(d.message)) === true,
        name,
      );
    }
  });
});

describe('the rings of a search by distance', () => {
  test('whatever the cursor holds and the rings find: at most MAX_RINGS, the last at the radius', () => {
    fc.assert(
      fc.property(
        fc.record({
          latitude: fc.double({ min: -90, max: 90, noNaN: true }),
          longitude: fc.double({ min: -180, max: 180, noNaN: true }),
          radiusKm: fc.double({ min: 1, max: 500, noNaN: true }),
          limit: fc.integer({ min: 1, max: 100 }),
          hasCursor: fc.boolean(),
        }),
        fc.array(fc.nat({ max: 10 }), { minLength: 1, maxLength: 20 }),
        fc.tuple(fc.double({ min: 0, max: 1, noNaN: true }), fc.double({ min: 0, max: 1, noNaN: true })),
        fc.constantFrom(0, 1e-300, 5e-324, 1e-9),
        (shape, founds, [d, s], tiny) => {
          const query = {
            near: { latitude: shape.latitude, longitude: shape.longitude, radiusKm: shape.radiusKm },
            limit: shape.limit,
            sort: 'distance',
            after: shape.hasCursor
              ? { id: 1, distance: d * shape.radiusKm, span: s < 0.5 ? tiny : s * shape.radiusKm }
              : undefined,
          } as unknown as ListingQuery;
          let rings = 0;
          let last: Ring | undefined;
          for (let ring = nextRing(query); ring;) {
            rings++;
            assert.ok(rings <= MAX_RINGS, `ring ${rings} of at most ${MAX_RINGS}`);
            last = ring;
            // Few found each time (never more than a page): the search must still end.
            const found = Math.min(founds[(rings - 1) % founds.length]!, query.limit);
            ring = nextRing(query, { ring, found });
          }
          assert.ok(last, 'at least one ring');
          assert.equal(last.outer, shape.radiusKm, 'the last ring reaches the radius');
        },
      ),
      SETTINGS,
    );
  });
});

for (const backend of await backends()) {
  describe(`searchListings query strings [${backend.name}]`, () => {
    let ctx: TestContext;
    let key: string;

    before(async () => {
      ctx = await createTestContext(backend);
      ({ key } = await ctx.createKey({ name: 'fuzz-listings' }));
      for (let i = 0; i < 5; i++) {
        const pet = await ctx.app.inject({
          method: 'POST',
          url: '/v1/pets',
          headers: bearer(key),
          payload: { name: `Near ${i}`, categoryId: 1 },
        });
        await ctx.app.inject({
          method: 'PUT',
          url: `/v1/pets/${pet.json<{ id: number }>().id}/profile`,
          headers: bearer(key),
          payload: { location: { latitude: 52.5 + i / 50, longitude: 13.4 } },
        });
      }
    });
    after(() => ctx.close());

    test('any query string: 200 or 400, well-formed, promptly', { timeout: TEST_TIMEOUT }, async (t) => {
      const tally = new StatusTally();
      let slowest = 0;
      await fc.assert(
        fc.asyncProperty(rawQuery, async (raw) => {
          const params = new URLSearchParams();
          for (const [name, value] of Object.entries(raw)) {
            for (const v of Array.isArray(value) ? value : [value]) params.append(name, v);
          }
          // Within what a client can send in a request line (the service's header limit is 16 KiB).
          const url = `/v1/listings?${params.toString()}`.slice(0, 12_000);
          const started = performance.now();
          const res = await ctx.app.inject({ url, headers: bearer(key) });
          slowest = Math.max(slowest, performance.now() - started);
          tally.add(res.statusCode);
          assertWellFormed(res, url.slice(0, 200));
          assert.ok([200, 400].includes(res.statusCode), `${url.slice(0, 200)}: ${res.statusCode}`);
        }),
        SETTINGS,
      );
      t.diagnostic(`slowest answer ${slowest.toFixed(1)} ms`);
      assert.ok(slowest < PROMPT_MS, `slowest answer ${slowest.toFixed(1)} ms`);
      tally.report(t, [200, 400]);
    });
  });
}
