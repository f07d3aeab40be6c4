/**
 * Well-formed strings, on every backend: a JSON body holding a lone surrogate (`"\ud800"`) or U+0000 anywhere (any
 * field of any write route, at any depth, in a value or in a member's name) is a 400 naming the field, and
 * nothing is stored: every resource the routes write reads back exactly as before.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { RUNS, SEED, SETTINGS, StatusTally, TEST_TIMEOUT } from './support/fuzz.js';
import { assertV1Error } from './support/assertions.js';
import { backends, bearer, createTestContext, type TestContext } from './helpers.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

interface WriteRoute {
  method: 'POST' | 'PUT' | 'PATCH';
  url: string;
  contentType: string;
  /** A body the route accepts (its strings ASCII, so one surrogate put in stays alone). */
  body: Json;
}

const PROFILE: Json = {
  description: 'Calm.\nLoves walks.',
  breed: 'Labrador',
  sex: 'female',
  birthDate: '2022-04-01',
  colors: ['black', 'white'],
  goodWith: { children: true, dogs: null },
  location: { postalCode: '10115', latitude: 52.52, longitude: 13.405 },
};

/** Every string of `value` with its path (as error details name fields), and every object with its path. */
function places(value: Json, path: string[] = []): { strings: string[][]; objects: string[][] } {
  const out = { strings: [] as string[][], objects: [] as string[][] };
  if (typeof value === 'string') out.strings.push(path);
  else if (Array.isArray(value)) {
    value.forEach((item, i) => {
      const inner = places(item, [...path, String(i)]);
      out.strings.push(...inner.strings);
      out.objects.push(...inner.objects);
    });
  } else if (typeof value === 'object' && value !== null) {
    out.objects.push(path);
    for (const [key, item] of Object.entries(value)) {
      const inner = places(item, [...path, key]);
      out.strings.push(...inner.strings);
      out.objects.push(...inner.objects);
    }
  }
  return out;
}

function at(value: Json, path: string[]): Json {
  return path.reduce<Json>((node, key) => (node as Record<string, Json>)[key]!, value);
}

/** A lone surrogate, or U+0000 (which PostgreSQL's text cannot hold). */
const surrogate = fc.oneof(
  fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)),
  fc.constant('\u0000'),
);

/**
 * A route's body with one lone surrogate: put into one of its strings (at any position), into a new
 * member's value or into a new member's name, at any object of the body.
 */
function poisoned(route: WriteRoute) {
  const { strings, objects } = places(route.body);
  const inString = fc
    .tuple(fc.constantFrom(...(strings.length > 0 ? strings : [[]])), fc.nat(), surrogate)
    .map(([path, position, lone]) => {
      const body = structuredClone(route.body);
      const old = at(body, path) as string;
      const i = position % (old.length + 1);
      const parent = at(body, path.slice(0, -1)) as Record<string, Json>;
      parent[path.at(-1)!] = old.slice(0, i) + lone + old.slice(i);
      return { body, field: path.join('.') };
    });
  const inMember = fc
    .tuple(fc.constantFrom(...objects), fc.string({ maxLength: 8 }), surrogate, fc.boolean())
    .map(([path, text, lone, inName]) => {
      const body = structuredClone(route.body);
      const parent = at(body, path) as Record<string, Json>;
      const name = inName ? `x${lone}${text}` : `x${text}`;
      parent[name] = inName ? text : `${text}${lone}`;
      return { body, field: [...path, inName ? `x\ufffd${text}` : name].join('.') };
    });
  return strings.length > 0 ? fc.oneof(inString, inMember) : inMember;
}

for (const backend of await backends()) {
  describe(`well-formed strings [${backend.name}] (seed ${SEED}, ${RUNS} runs)`, () => {
    let ctx: TestContext;
    let key: string;
    let routes: WriteRoute[];
    let reads: string[];

    before(async () => {
      ctx = await createTestContext(backend, {
        config: { unauthenticatedPerMinute: 1_000_000_000 },
      });
      ({ key } = await ctx.createKey({ plan: 'enterprise', perMinute: 1e9, perDay: 1e9 }));
      const send = async (method: string, url: string, payload?: Json) => {
        const res = await ctx.app.inject({
          method: method as 'POST',
          url,
          headers: bearer(key),
          ...(payload === undefined ? {} : { payload: payload as object }),
        });
        assert.ok(res.statusCode < 300, `${method} ${url}: ${res.statusCode} ${res.body}`);
        return res.json<{ id: number }>();
      };
      const pet = await send('POST', '/v1/pets', { name: 'Rex', categoryId: 1 });
      const ordered = await send('POST', '/v1/pets', { name: 'Luna', categoryId: 1 });
      await send('PUT', `/v1/pets/${pet.id}/profile`, PROFILE);
      const order = await send('POST', '/v1/store/orders', { petId: ordered.id });
      const endpoint = await send('POST', '/v1/webhook-endpoints', {
        url: 'https://shop.example.com/hooks',
        events: ['pet.created'],
      });
      const json = 'application/json';
      const patch = 'application/merge-patch+json';
      routes = [
        { method: 'POST', url: '/v1/pets', contentType: json, body: { name: 'Max', categoryId: 1 } },
        { method: 'PATCH', url: `/v1/pets/${pet.id}`, contentType: patch, body: { name: 'Rexy' } },
        { method: 'PUT', url: `/v1/pets/${pet.id}/profile`, contentType: json, body: PROFILE },
        {
          method: 'PATCH',
          url: `/v1/pets/${pet.id}/profile`,
          contentType: patch,
          body: { breed: 'Collie', location: { postalCode: '20095' } },
        },
        { method: 'POST', url: '/v1/store/orders', contentType: json, body: { petId: pet.id } },
        {
          method: 'POST',
          url: `/v1/store/orders/${order.id}/cancel`,
          contentType: json,
          body: { note: 'x' },
        },
        {
          method: 'POST',
          url: '/v1/webhook-endpoints',
          contentType: json,
          body: { url: 'https://other.example.com/hooks', events: ['pet.created', 'order.placed'] },
        },
        {
          method: 'PATCH',
          url: `/v1/webhook-endpoints/${endpoint.id}`,
          contentType: patch,
          body: { url: 'https://shop.example.com/hooks/v2', events: ['*'] },
        },
        {
          method: 'POST',
          url: `/v1/webhook-endpoints/${endpoint.id}/rotate-secret`,
          contentType: json,
          body: { reason: 'x' },
        },
      ];
      reads = [
        '/v1/pets?limit=100',
        `/v1/pets/${pet.id}`,
        `/v1/pets/${pet.id}/profile`,
        '/v1/store/orders?limit=100',
        '/v1/webhook-endpoints?limit=100',
        '/v1/events?limit=100',
      ];
    });
    after(() => ctx.close());

    async function snapshot(): Promise<string[]> {
      const out: string[] = [];
      for (const url of reads) {
        const res = await ctx.app.inject({ url, headers: bearer(key) });
        assert.equal(res.statusCode, 200, `${url}: ${res.body}`);
        out.push(res.body);
      }
      return out;
    }

    test(
      'a lone surrogate or NUL anywhere in a write body: 400 naming it, nothing stored',
      {
        timeout: TEST_TIMEOUT,
      },
      async (t) => {
        const tally = new StatusTally();
        const before = await snapshot();
        await fc.assert(
          fc.asyncProperty(
            fc.nat().chain((i) => {
              const route = routes[i % routes.length]!;
              return poisoned(route).map((poison) => ({ route, ...poison }));
            }),
            async ({ route, body, field }) => {
              const payload = JSON.stringify(body);
              assert.match(
                payload,
                /\\u(d[89a-f][0-9a-f]{2}|0000)/,
                'the body spells a lone surrogate or NUL',
              );
              const res = await ctx.app.inject({
                method: route.method,
                url: route.url,
                headers: { ...bearer(key), 'content-type': route.contentType, 'idempotency-key': 'k' },
                payload,
              });
              tally.add(res.statusCode);
              const label = `${route.method} ${route.url} ${payload}`;
              assertV1Error(res, 400, 'validation_failed', label);
              const details = res.json<{ details: { field: string; message: string }[] }>().details;
              assert.ok(
                details.some((d) => d.field === field && /well-formed Unicode|U\+0000/.test(d.message)),
                `${label}: ${res.body} names ${field}`,
              );
            },
          ),
          SETTINGS,
        );
        assert.deepEqual(await snapshot(), before, 'nothing was stored');
        tally.report(t, [400]);
      },
    );

    test('well-formed text outside the BMP and U+FFFD itself are stored as sent', async () => {
      const name = 'Rex 🐶 \ufffd';
      const res = await ctx.app.inject({
        method: 'POST',
        url: '/v1/pets',
        headers: bearer(key),
        payload: { name, categoryId: 1 },
      });
      assert.equal(res.statusCode, 201, res.body);
      const read = await ctx.app.inject({ url: `/v1/pets/${res.json().id}`, headers: bearer(key) });
      assert.equal(read.json().name, name);
    });

    test('a webhook URL holding NUL is a 400 (PostgreSQL cannot store it), not a 500', async () => {
      const res = await ctx.app.inject({
        method: 'POST',
        url: '/v1/webhook-endpoints',
        headers: bearer(key),
        payload: { url: 'https://nul.example.com/\u0000x', events: ['pet.created'] },
      });
      assertV1Error(res, 400, 'validation_failed', 'NUL in url');
      assert.deepEqual(res.json().details, [{ field: 'url', message: 'must not contain U+0000 (NUL)' }]);
    });

    test('deep nesting is walked without recursion and answered as one 400', async () => {
      const depth = 5000;
      const payload = `${'['.repeat(depth)}"\\ud800"${']'.repeat(depth)}`;
      const res = await ctx.app.inject({
        method: 'POST',
        url: '/v1/pets',
        headers: { ...bearer(key), 'content-type': 'application/json' },
        payload,
      });
      assertV1Error(res, 400, 'validation_failed', 'deep');
      assert.ok(res.json().details[0].field.length <= 200);
    });
  });
}
