/**
 * Property-based tests: random bodies, query strings, path segments and headers thrown at the API through
 * real storage. Whatever arrives: never a 5xx; every 4xx is the Error shape with `status` equal to the HTTP
 * status and `application/json`; and the number of pets grows by exactly the number of (non-replayed) 201s,
 * so no request leaves half a record behind.
 *
 * Seeded, so a failure reproduces: fast-check prints the seed and the counterexample path. Override with
 * FUZZ_SEED and FUZZ_RUNS.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { SAFE_REQUEST_ID } from './support/assertions.js';
import {
  anyString,
  assertWellFormed,
  headerValue,
  pathSegment,
  printable,
  RUNS,
  SEED,
  SETTINGS,
  TEST_TIMEOUT,
} from './support/fuzz.js';
import { PET_STATUSES } from '../src/modules/pets/schemas.js';
import { backends, bearer, countPets, createTestContext, type TestContext } from './helpers.js';

function isPet(value: unknown): boolean {
  const pet = value as Record<string, unknown>;
  return (
    typeof pet === 'object' &&
    pet !== null &&
    Number.isSafeInteger(pet.id) &&
    (pet.id as number) > 0 &&
    typeof pet.name === 'string' &&
    Number.isSafeInteger(pet.categoryId) &&
    (PET_STATUSES as readonly unknown[]).includes(pet.status) &&
    Object.keys(pet).length === 4
  );
}

/** Bodies shaped roughly like a NewPet, so that some are valid and are created. */
const petLike = fc
  .record(
    {
      name: fc.oneof(
        anyString,
        fc.constantFrom('Rex', ' Luna ', '🐶', 'x'.repeat(100), 'x'.repeat(101)),
        fc.integer(),
        fc.constant(null),
      ),
      categoryId: fc.oneof(
        fc.integer({ min: -2, max: 10 }),
        fc.constantFrom(2 ** 53 - 1, 2 ** 53, 1.5, -0, 1e308),
        fc.double(),
        fc.string(),
        fc.constant(null),
      ),
      status: fc.oneof(fc.constantFrom(...PET_STATUSES), anyString, fc.constant(null)),
      id: fc.integer(),
      extra: fc.jsonValue({ maxDepth: 2 }),
    },
    { requiredKeys: [] },
  )
  .map((pet) => {
    // Mostly omit the fields that make a body invalid, so that valid bodies are common.
    const { id, extra, ...rest } = pet;
    return { rest, id, extra };
  })
  .chain(({ rest, id, extra }) =>
    fc.tuple(fc.boolean(), fc.boolean()).map(([withId, withExtra]) => ({
      ...rest,
      ...(withId && id !== undefined ? { id } : {}),
      ...(withExtra && extra !== undefined ? { extra } : {}),
    })),
  );

const validPet = fc.record(
  {
    name: fc
      .string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 50 })
      .filter((s) => s.trim().length > 0),
    categoryId: fc.integer({ min: 1, max: 7 }),
    status: fc.constantFrom(...PET_STATUSES),
  },
  { requiredKeys: ['name', 'categoryId'] },
);

for (const backend of await backends()) {
  describe(`fuzz [${backend.name}] (seed ${SEED}, ${RUNS} runs)`, () => {
    let ctx: TestContext;
    let key: string;
    let created = 0;
    let baseline = 0;
    /** Statuses seen in the current property, reported as a diagnostic so weak generators show up. */
    let tally = new Map<number, number>();
    function report(t: { diagnostic(message: string): void }, expected: number[]): void {
      const seen = [...tally].sort(([a], [b]) => a - b);
      t.diagnostic(`statuses: ${seen.map(([status, n]) => `${status}×${n}`).join(', ')}`);
      for (const status of expected) assert.ok(tally.has(status), `the generators produced a ${status}`);
      tally = new Map();
    }

    before(async () => {
      ctx = await createTestContext(backend, { config: { unauthenticatedPerMinute: 1_000_000_000 } });
      ({ key } = await ctx.createKey({
        plan: 'enterprise',
        perMinute: 1_000_000_000,
        perDay: 1_000_000_000,
      }));
      baseline = await countPets(ctx.database);
    });
    after(() => ctx.close());

    /** Sends, checks the invariants, and tracks creations; asserts the pet count after each request. */
    async function send(options: InjectOptions, label: string): Promise<LightMyRequestResponse> {
      const res = await ctx.app.inject(options);
      assertWellFormed(res, label);
      tally.set(res.statusCode, (tally.get(res.statusCode) ?? 0) + 1);
      if (res.statusCode === 201 && res.headers['idempotent-replayed'] !== 'true') created++;
      if (options.method === 'POST') {
        assert.equal(
          await countPets(ctx.database),
          baseline + created,
          `${label}: pets grow only by the 201s`,
        );
      }
      return res;
    }

    test('random JSON values as POST /v1/pets bodies', { timeout: TEST_TIMEOUT }, async (t) => {
      await fc.assert(
        fc.asyncProperty(fc.oneof(fc.jsonValue(), petLike, petLike, validPet), async (value) => {
          const payload = JSON.stringify(value) ?? 'null';
          const res = await send(
            {
              method: 'POST',
              url: '/v1/pets',
              headers: { ...bearer(key), 'content-type': 'application/json' },
              payload,
            },
            `POST ${payload.slice(0, 200)}`,
          );
          assert.ok([201, 400, 413].includes(res.statusCode), `${res.statusCode} ${res.body}`);
          if (res.statusCode === 201) {
            const pet = res.json();
            assert.ok(isPet(pet), res.body);
            const sent = value as { name: string; categoryId: number; status?: string };
            assert.equal(pet.name, sent.name, 'name stored exactly as sent');
            assert.equal(pet.categoryId, sent.categoryId);
            assert.equal(pet.status, sent.status ?? 'available');
            assert.equal(res.headers.location, `/v1/pets/${pet.id}`);
          }
        }),
        SETTINGS,
      );
      report(t, [201, 400]);
    });

    test(
      'random strings as POST /v1/pets bodies, with JSON and other media types',
      { timeout: TEST_TIMEOUT },
      async (t) => {
        await fc.assert(
          fc.asyncProperty(
            fc.oneof(
              anyString,
              fc.json().map((j) => j.slice(0, Math.max(0, j.length - 1))),
              fc.json(),
            ),
            fc.oneof(
              fc.constantFrom(
                'application/json',
                'application/json; charset=utf-8',
                'text/plain',
                'application/x-www-form-urlencoded',
              ),
              headerValue,
            ),
            async (payload, contentType) => {
              const res = await send(
                {
                  method: 'POST',
                  url: '/v1/pets',
                  headers: { ...bearer(key), 'content-type': contentType },
                  payload,
                },
                `POST [${contentType}] ${JSON.stringify(payload).slice(0, 200)}`,
              );
              assert.ok([201, 400, 413, 415].includes(res.statusCode), `${res.statusCode} ${res.body}`);
            },
          ),
          SETTINGS,
        );
        report(t, [400, 415]);
      },
    );

    test('random query strings for GET /v1/pets', { timeout: TEST_TIMEOUT }, async (t) => {
      // Something to list.
      for (let i = 0; i < 5; i++) {
        await send(
          {
            method: 'POST',
            url: '/v1/pets',
            headers: bearer(key),
            payload: { name: `Q${i}`, categoryId: 1, status: PET_STATUSES[i % 3] },
          },
          'seed pet',
        );
      }
      const name = fc.oneof(
        fc.constantFrom('limit', 'status', 'cursor', 'offset', 'page', 'limit[]', ''),
        printable,
        fc.string(),
      );
      const value = fc.oneof(
        fc.integer({ min: -5, max: 150 }).map(String),
        fc.constantFrom(...PET_STATUSES, '1e1', '0x10', '20.0', ' 5', '', 'aWQ6MQ', 'aWQ6MQ==', 'null'),
        fc.double().map(String),
        fc.string(),
        printable,
      );
      const encoded = fc
        .array(fc.tuple(name, value, fc.boolean()), { maxLength: 5 })
        .map((pairs) =>
          pairs
            .map(([k, v, raw]) =>
              raw
                ? `${k.replace(/[#\s]/g, '')}=${v.replace(/[#\s]/g, '')}`
                : `${encodeURIComponent(k)}=${encodeURIComponent(v)}`,
            )
            .join('&'),
        );
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(
            encoded,
            printable.map((s) => s.replace(/#/g, '')),
          ),
          async (query) => {
            const url = `/v1/pets?${query}`;
            const res = await send({ url, headers: bearer(key) }, `GET ${url}`);
            assert.ok([200, 400].includes(res.statusCode), `${url}: ${res.statusCode} ${res.body}`);
            if (res.statusCode === 200) {
              const pets = res.json();
              assert.ok(Array.isArray(pets) && pets.every(isPet), res.body);
              const params = new URLSearchParams(query);
              const limit = params.has('limit') ? Number(params.get('limit')) : 20;
              assert.ok(pets.length <= limit, `${url}: ${pets.length} > ${limit}`);
              const status = params.get('status');
              if (status !== null)
                assert.ok(
                  pets.every((p: { status: string }) => p.status === status),
                  url,
                );
              const ids = pets.map((p: { id: number }) => p.id);
              assert.deepEqual(
                ids,
                [...ids].sort((a, b) => a - b),
                'ordered by id',
              );
            }
          },
        ),
        SETTINGS,
      );
      report(t, [200, 400]);
    });

    test('random path segments for GET /v1/pets/{x}', { timeout: TEST_TIMEOUT }, async (t) => {
      await fc.assert(
        fc.asyncProperty(pathSegment, async (x) => {
          const url = `/v1/pets/${x}`;
          const res = await send({ url, headers: bearer(key) }, `GET ${url}`);
          assert.ok([200, 400, 404].includes(res.statusCode), `${url}: ${res.statusCode} ${res.body}`);
          if (res.statusCode === 200) {
            assert.ok(isPet(res.json()), res.body);
            assert.equal(
              String(res.json().id),
              String(Number(decodeURIComponent(x))),
              `${url} returns that pet`,
            );
          }
        }),
        SETTINGS,
      );
      report(t, [200, 400, 404]);
    });

    test(
      'random Authorization, Content-Type, Idempotency-Key and X-Request-Id headers',
      { timeout: TEST_TIMEOUT },
      async (t) => {
        const authorization = fc.oneof(
          { arbitrary: fc.constant(`Bearer ${key}`), weight: 6 },
          fc.constantFrom('bearer', 'BEARER', 'Bearer', 'Basic', 'Token', '').map((s) => `${s} ${key}`),
          fc.constant(undefined),
          headerValue,
          headerValue.map((v) => `Bearer ${v}`),
          fc.constant(key),
        );
        const contentType = fc.oneof(
          { arbitrary: fc.constant('application/json'), weight: 3 },
          fc.constantFrom(
            'application/json',
            'APPLICATION/JSON',
            'application/json; charset=utf-8',
            'application/json;;',
            'application/merge-patch+json',
            'text/plain',
          ),
          fc.constant(undefined),
          headerValue,
        );
        const idempotencyKey = fc.oneof(
          fc.constant(undefined),
          { arbitrary: fc.constantFrom('k1', 'k2', 'k3'), weight: 2 },
          headerValue,
        );
        const requestId = fc.oneof(
          fc.constant(undefined),
          headerValue,
          fc.stringMatching(/^[\w.:-]{1,128}$/),
        );
        const body = fc.oneof({ arbitrary: validPet, weight: 3 }, petLike, fc.jsonValue({ maxDepth: 2 }));
        const ifMatch = fc.oneof(
          fc.constant(undefined),
          fc.constantFrom('*', '"1"', 'W/"1"', '"1", "2"'),
          headerValue,
        );
        await fc.assert(
          fc.asyncProperty(
            fc.constantFrom('GET', 'POST', 'PATCH', 'DELETE'),
            authorization,
            contentType,
            idempotencyKey,
            requestId,
            body,
            ifMatch,
            async (method, auth, type, idem, rid, value, match) => {
              const headers: Record<string, string> = {};
              if (auth !== undefined) headers.authorization = auth;
              if (type !== undefined) headers['content-type'] = type;
              if (idem !== undefined) headers['idempotency-key'] = idem;
              if (rid !== undefined) headers['x-request-id'] = rid;
              if (match !== undefined && (method === 'PATCH' || method === 'DELETE'))
                headers['if-match'] = match;
              // PATCH changes pet 1 (or finds none); DELETE aims at a pet that does not exist, so the count
              // check at the end still holds.
              const url =
                method === 'PATCH' ? '/v1/pets/1' : method === 'DELETE' ? '/v1/pets/987654321' : '/v1/pets';
              const options: InjectOptions =
                method === 'GET' || method === 'DELETE'
                  ? { method, url, headers }
                  : { method, url, headers, payload: JSON.stringify(value) ?? 'null' };
              const res = await send(options, `${method} ${JSON.stringify(headers)}`);
              if (rid !== undefined && SAFE_REQUEST_ID.test(rid))
                assert.equal(res.headers['x-request-id'], rid, 'safe id echoed');
              if (res.statusCode === 401) assert.match(String(res.headers['www-authenticate']), /^Bearer\b/);
              if (auth === `Bearer ${key}` && res.statusCode === 401)
                assert.fail(`valid key rejected: ${res.body}`);
            },
          ),
          SETTINGS,
        );
        report(t, [200, 201, 400, 401, 415, 422]);
      },
    );

    test('in the end, the pets stored are exactly the ones acknowledged with 201', async () => {
      assert.ok(created > 0, 'the generators produced some valid pets');
      assert.equal(await countPets(ctx.database), baseline + created);
    });
  });
}
