/**
 * Property-based tests of the cursors of every list (http/cursors.ts and each list's reading of them):
 * - the codec: what is issued for a query reads back as issued; any other string, any change to an issued
 *   one, and an issued one read for another query are `invalid_cursor`, in bounded time;
 * - through the API, on every backend, for every list (support/lists.ts, which must hold every operation of
 *   the OpenAPI document that takes a cursor, applications included): mutations of a real cursor (bits
 *   flipped, cut short, lengthened, tags and payloads swapped between lists, extreme numbers such as 1e-300,
 *   5e-324, -0 and 1e308, old-style and huge strings) answer `400 invalid_cursor` at once, never a 5xx;
 *   and cursors signed with the service's own secret but holding out-of-range values (as if the secret had
 *   leaked) answer 200 or `400 invalid_cursor`, promptly.
 *
 * Seeded like test/fuzz.test.ts (FUZZ_SEED, FUZZ_RUNS).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { ApiError } from '../src/http/errors.js';
import { Cursors, MAX_CURSOR_LENGTH, type CursorBinding } from '../src/http/cursors.js';
import { webhookRepository } from '../src/modules/webhooks/repository.js';
import { backends, bearer, createTestContext, type TestContext } from './helpers.js';
import { assertV1Error } from './support/assertions.js';
import { cursorsOf } from './support/cursors.js';
import { assertWellFormed, RUNS, SEED, SETTINGS, StatusTally, TEST_TIMEOUT } from './support/fuzz.js';
import { EXTREME_NUMBERS, mutatedCursor, seedLists, withCursor, type ListCase } from './support/lists.js';

/** A request refused before any database work answers well within this, even on a loaded machine. */
const PROMPT_MS = 1000;

const value = fc.oneof(
  fc.integer(),
  fc.maxSafeInteger(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(...EXTREME_NUMBERS),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
);
const values = fc.array(value, { minLength: 1, maxLength: 4 });
const binding: fc.Arbitrary<CursorBinding> = fc.record(
  {
    path: fc.constantFrom('/v1/pets', '/v1/listings', '/v1/events', '/v1/webhook-endpoints/1/deliveries'),
    filters: fc.dictionary(
      fc.constantFrom('status', 'sort', 'near', 'q', 'type', 'petId'),
      fc.oneof(fc.string({ maxLength: 20 }), fc.integer(), fc.constant(undefined)),
      { maxKeys: 4 },
    ),
  },
  { requiredKeys: ['path'] },
);

function isInvalidCursor(error: unknown): boolean {
  return error instanceof ApiError && error.code === 'invalid_cursor' && error.status === 400;
}

describe('the cursor codec', () => {
  const cursors = new Cursors('s'.repeat(32));

  test('round trip: a cursor reads back the values it was issued with, for its query', () => {
    fc.assert(
      fc.property(binding, values, (b, v) => {
        const cursor = cursors.issue(b, v);
        assert.match(cursor, /^[\w-]+\.[\w-]{22}$/);
        // JSON has one zero: -0 comes back as 0.
        assert.deepEqual(cursors.read(b, cursor), JSON.parse(JSON.stringify(v)));
      }),
      SETTINGS,
    );
  });

  test('any change to an issued cursor, and any other string, is invalid_cursor in bounded time', () => {
    const issued = fc.tuple(binding, values).map(([b, v]) => ({ b, cursor: cursors.issue(b, v) }));
    fc.assert(
      fc.property(
        issued.chain(({ b, cursor }) =>
          fc
            .oneof(mutatedCursor(cursor, []), fc.string({ maxLength: 50 }))
            .filter((mutated) => mutated !== cursor)
            .map((mutated) => ({ b, cursor, mutated })),
        ),
        ({ b, cursor, mutated }) => {
          // The original read first: what a read remembers must not let anything else through.
          cursors.read(b, cursor);
          assert.throws(() => cursors.read(b, mutated), isInvalidCursor, mutated);
        },
      ),
      SETTINGS,
    );
  });

  test('a cursor read for another query (path or parameters) is invalid_cursor', () => {
    fc.assert(
      fc.property(binding, binding, values, (issuedFor, readFor, v) => {
        const cursor = cursors.issue(issuedFor, v);
        cursors.read(issuedFor, cursor);
        const same = (b: CursorBinding) =>
          `${b.path}|${JSON.stringify(
            Object.entries(b.filters ?? {})
              .filter(([, x]) => x !== undefined)
              .map(([k, x]) => [k, String(x)])
              .sort(),
          )}`;
        if (same(issuedFor) === same(readFor))
          assert.deepEqual(cursors.read(readFor, cursor).length, v.length);
        else assert.throws(() => cursors.read(readFor, cursor), isInvalidCursor);
      }),
      SETTINGS,
    );
  });

  test('reads remember verified cursors only, and stay exact past the number remembered', () => {
    const own = new Cursors('r'.repeat(32));
    const pets = { path: '/v1/pets' };
    const first = own.issueId(pets, 7);
    const values = own.read(pets, first);
    assert.ok(Object.isFrozen(values), 'a remembered answer cannot be changed by the caller');
    assert.equal(own.read(pets, first), values, 'read again from memory');
    // More distinct cursors than are remembered: each still reads as issued, the first included.
    for (let id = 1; id <= 10_000; id++) assert.equal(own.readId(pets, own.issueId(pets, id)), id);
    assert.equal(own.readId(pets, first), 7);
    assert.throws(() => own.read({ path: '/v1/pets', filters: { status: 'sold' } }, first), isInvalidCursor);
    assert.throws(() => own.read(pets, `${first.slice(0, -1)}A`), isInvalidCursor);
  });

  test('another secret, an id out of range and a huge string are invalid_cursor; the work is bounded', () => {
    const other = new Cursors('t'.repeat(32));
    fc.assert(
      fc.property(binding, values, (b, v) => {
        assert.throws(() => cursors.read(b, other.issue(b, v)), isInvalidCursor);
      }),
      SETTINGS,
    );
    for (const id of [0, -1, 1.5, 2 ** 53, 1e-300, 5e-324, 1e308, '1']) {
      assert.throws(
        () => cursors.readId({ path: '/v1/pets' }, cursors.issue({ path: '/v1/pets' }, [id])),
        isInvalidCursor,
      );
    }
    assert.equal(cursors.readId({ path: '/v1/pets' }, cursors.issueId({ path: '/v1/pets' }, 42)), 42);
    const huge = `${'A'.repeat(10_000_000)}.${'A'.repeat(22)}`;
    const started = performance.now();
    assert.throws(() => cursors.read({ path: '/v1/pets' }, huge), isInvalidCursor);
    assert.throws(
      () => cursors.read({ path: '/v1/pets' }, 'A'.repeat(MAX_CURSOR_LENGTH + 1)),
      isInvalidCursor,
    );
    assert.ok(performance.now() - started < 50, 'refused by its length, without reading it');
    assert.throws(() => new Cursors('short'), /at least 32 bytes/);
  });
});

for (const backend of await backends()) {
  describe(`cursors of every list through the API [${backend.name}]`, () => {
    let ctx: TestContext;
    let key: string;
    let lists: ListCase[];
    const send = (method: string, url: string, body?: unknown) =>
      ctx.app
        .inject({
          method: method as 'GET',
          url,
          headers: bearer(key),
          ...(body === undefined ? {} : { payload: body as object }),
        })
        .then((res) => ({ status: res.statusCode, headers: res.headers, body: res.body, res }));

    before(async () => {
      ctx = await createTestContext(backend);
      // Every list against every other's cursor, then the fuzzing: more requests than a business minute allows.
      ({ key } = await ctx.createKey({
        name: 'fuzz-cursors',
        plan: 'enterprise',
        perMinute: 100_000_000,
        perDay: 100_000_000,
      }));
      lists = await seedLists(send, async () => {
        await ctx.database.repository(webhookRepository).fanOut(ctx.clock.now, 100);
      });
    });
    after(() => ctx.close());

    test('the lists fuzzed are every operation that takes a cursor', async () => {
      const openapi = (await ctx.app.inject({ url: '/v1/openapi.json' })).json() as {
        paths: Record<
          string,
          Record<string, { operationId: string; parameters?: { name: string; in: string }[] }>
        >;
      };
      const paged = Object.entries(openapi.paths).flatMap(([path, operations]) =>
        Object.values(operations)
          .filter((op) => op.parameters?.some((p) => p.name === 'cursor' && p.in === 'query'))
          .map((op) => ({ operationId: op.operationId, path })),
      );
      assert.ok(
        paged.some((op) => op.operationId === 'listApplications'),
        'the document lists cursor parameters',
      );
      for (const { operationId, path } of paged) {
        const template = new RegExp(`^(/v1)?${path.replace(/\{[^}]+\}/g, '[^/]+')}$`);
        assert.ok(
          lists.some((list) => template.test(new URL(list.url, 'http://x').pathname)),
          `${operationId} (${path}) takes a cursor: its list belongs in test/support/lists.ts`,
        );
      }
    });

    test('every list hands out a cursor that pages on, and only for its own query', async () => {
      for (const list of lists) {
        const next = await send('GET', withCursor(list.url, list.cursor));
        assert.equal(next.status, 200, `${list.name}: ${next.body}`);
        // The limit is not part of the query a cursor is bound to.
        const wider = await send('GET', withCursor(list.url.replace('limit=1', 'limit=5'), list.cursor));
        assert.equal(wider.status, 200, `${list.name} with another limit: ${wider.body}`);
        for (const other of lists) {
          if (other === list) continue;
          const res = await send('GET', withCursor(other.url, list.cursor));
          assertV1Error(res.res, 400, 'invalid_cursor', `${list.name}'s cursor on ${other.name}`);
          assert.doesNotMatch(res.body, new RegExp(list.cursor.replace(/[.-]/g, '\\$&')), 'no echo');
        }
      }
    });

    test('the cursor of defect 1 (a search by distance with a span of 1e-300) answers at once', async () => {
      const url =
        '/v1/listings?near=52.52,13.405&sort=distance&limit=3&cursor=WyJkaXN0YW5jZSIsMSwxMCwxZS0zMDBd';
      assertV1Error((await send('GET', url)).res, 400, 'invalid_cursor', 'unsigned');
      // Signed with the service's own secret (as if it had leaked): in range, so searched, and bounded.
      const cursors = await cursorsOf(ctx.database);
      const query = { near: '52.52,13.405', sort: 'distance' };
      for (const [distance, span] of [
        [10, 1e-300],
        [10, 5e-324],
        [0, 0],
        [49.999, 1e-300],
        [50, 50],
      ]) {
        const cursor = cursors.issue({ path: '/v1/listings', filters: query }, [1, distance!, span!]);
        const started = performance.now();
        const res = await send(
          'GET',
          `/v1/listings?near=52.52,13.405&sort=distance&limit=3&cursor=${cursor}`,
        );
        assert.equal(res.status, 200, `${distance}, ${span}: ${res.body}`);
        assert.ok(performance.now() - started < PROMPT_MS, `${distance}, ${span}: answered promptly`);
      }
    });

    test(
      'mutated cursors of every list: 400 invalid_cursor at once, never a 5xx',
      { timeout: TEST_TIMEOUT },
      async (t) => {
        const others = lists.map((l) => l.cursor);
        const tally = new StatusTally();
        let slowest = 0;
        await fc.assert(
          fc.asyncProperty(
            fc
              .constantFrom(...lists)
              .chain((list) => mutatedCursor(list.cursor, others).map((cursor) => ({ list, cursor }))),
            async ({ list, cursor }) => {
              const url = withCursor(list.url, cursor);
              const started = performance.now();
              const res = await send('GET', url);
              slowest = Math.max(slowest, performance.now() - started);
              tally.add(res.status);
              assertWellFormed(res.res, url);
              assertV1Error(res.res, 400, 'invalid_cursor', `${list.name}: ${url}`);
            },
          ),
          SETTINGS,
        );
        t.diagnostic(`seed ${SEED}, ${RUNS} runs, slowest answer ${slowest.toFixed(1)} ms`);
        assert.ok(
          slowest < PROMPT_MS,
          `every answer within ${PROMPT_MS} ms (slowest ${slowest.toFixed(1)} ms)`,
        );
        tally.report(t, [400]);
      },
    );

    test(
      'cursors signed with the service secret but holding any values: 200 or invalid_cursor, promptly',
      { timeout: TEST_TIMEOUT },
      async (t) => {
        const cursors = await cursorsOf(ctx.database);
        const tally = new StatusTally();
        await fc.assert(
          fc.asyncProperty(fc.constantFrom(...lists), values, async (list, v) => {
            const url = new URL(list.url, 'http://x');
            const filters = Object.fromEntries([...url.searchParams].filter(([name]) => name !== 'limit'));
            const cursor = cursors.issue({ path: url.pathname, filters }, v);
            const started = performance.now();
            const res = await send('GET', withCursor(list.url, cursor));
            const took = performance.now() - started;
            tally.add(res.status);
            assertWellFormed(res.res, `${list.name} ${JSON.stringify(v)}`);
            if (res.status !== 200)
              assertV1Error(res.res, 400, 'invalid_cursor', `${list.name} ${JSON.stringify(v)}`);
            assert.ok(took < PROMPT_MS, `${list.name} ${JSON.stringify(v)}: ${took.toFixed(1)} ms`);
          }),
          SETTINGS,
        );
        tally.report(t, [200, 400]);
      },
    );
  });
}
