/**
 * Headers every answer carries (DESIGN 4.6): `X-Content-Type-Options: nosniff` on every kind of response,
 * `Cache-Control: no-store` on everything but the public documents fetched without a key, CORS for the
 * origins in CORS_ORIGINS (preflights on every /v1 route of the router, the exposed headers on successes and
 * errors alike, nothing for other origins), and the docs page's CSP without `upgrade-insecure-requests`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { loadConfig } from '../src/config.js';
import { ConfigError } from '../src/config-parsers.js';
import { backends, bearer, createTestContext, routerTable, type TestContext } from './helpers.js';

const ORIGIN = 'https://app.example.com';
const OTHER = 'https://evil.example.com';

/** The response headers DESIGN 4.6 requires a browser script to be able to read. */
const MUST_EXPOSE = [
  'Link',
  'Location',
  'ETag',
  'Retry-After',
  'X-Request-Id',
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'RateLimit',
  'RateLimit-Policy',
  'Deprecation',
  'Sunset',
];

interface Sample {
  label: string;
  status: number;
  res: LightMyRequestResponse;
  /** Sent with an API key. */
  keyed: boolean;
  /** A public document fetched without a key: the one kind of answer that may be cached. */
  document?: boolean;
}

/** Every /v1 path the router serves (templates with `:param`), except the docs' own static routes. */
function v1Paths(ctx: TestContext): string[] {
  const paths = routerTable(ctx.app.printRoutes({ commonPrefix: false }))
    .map((r) => r.path)
    .filter((p) => p.startsWith('/v1/') && !p.startsWith('/v1/docs'));
  return [...new Set(paths)];
}

function concrete(template: string): string {
  return template.replace(/:\w+/g, '1');
}

function preflight(url: string, origin: string, method = 'GET'): InjectOptions {
  return {
    method: 'OPTIONS',
    url,
    headers: {
      origin,
      'access-control-request-method': method,
      'access-control-request-headers': 'authorization, content-type',
    },
  };
}

function varyNames(res: LightMyRequestResponse): string[] {
  return String(res.headers.vary ?? '')
    .split(',')
    .map((v) => v.trim().toLowerCase());
}

function assertNoCors(res: LightMyRequestResponse, label: string): void {
  const cors = Object.keys(res.headers).filter((h) => h.startsWith('access-control-'));
  assert.deepEqual(cors, [], `${label}: no CORS headers`);
}

function assertCorsFor(res: LightMyRequestResponse, label: string): void {
  assert.equal(res.headers['access-control-allow-origin'], ORIGIN, `${label}: Access-Control-Allow-Origin`);
  assert.ok(varyNames(res).includes('origin'), `${label}: Vary: Origin`);
  const exposed = String(res.headers['access-control-expose-headers'] ?? '')
    .split(',')
    .map((h) => h.trim().toLowerCase());
  for (const name of MUST_EXPOSE)
    assert.ok(exposed.includes(name.toLowerCase()), `${label}: exposes ${name}`);
  assert.equal(res.headers['access-control-allow-credentials'], undefined, `${label}: no credentials`);
}

function assertErrorShape(res: LightMyRequestResponse, status: number, label: string): void {
  assert.equal(res.statusCode, status, `${label}: ${res.body}`);
  assert.match(String(res.headers['content-type']), /^application\/json\b/, label);
  assert.equal(res.json().status, status, label);
  assert.equal(typeof res.json().code, 'string', label);
  assert.ok(res.headers['x-request-id'], `${label}: X-Request-Id`);
}

for (const backend of await backends()) {
  describe(`headers [${backend.name}]`, () => {
    let ctx: TestContext;
    let key: string;
    /** One answer of every kind, sent from the listed origin; built once, inspected by several tests. */
    let samples: Sample[];

    before(async () => {
      // Keyless requests to every /v1 path (preflights from unlisted origins are 405s, counted): above 60.
      ctx = await createTestContext(backend, {
        config: { corsOrigins: [ORIGIN, 'http://10.0.0.7:8080'], unauthenticatedPerMinute: 1_000 },
      });
      ({ key } = await ctx.createKey());
      const { key: tiny } = await ctx.createKey({ plan: 'enterprise', perMinute: 1, perDay: 1000 });
      const strict = await createTestContext(backend, {
        config: { corsOrigins: [ORIGIN], unauthenticatedPerMinute: 1 },
      });
      const origin = { origin: ORIGIN };
      const withKey = { ...origin, ...bearer(key) };
      const send = async (
        label: string,
        status: number,
        options: InjectOptions,
        extra: Partial<Sample> = {},
      ): Promise<Sample> => {
        const res = await ctx.app.inject(options);
        assert.equal(res.statusCode, status, `${label}: ${res.body.slice(0, 200)}`);
        const headers = (options.headers ?? {}) as Record<string, string>;
        return { label, status, res, keyed: 'authorization' in headers, ...extra };
      };
      try {
        const docs = await ctx.app.inject({ url: '/v1/docs', headers: origin });
        const css = /href="([^"]+\.css)"/.exec(docs.body)?.[1];
        assert.ok(css, 'the docs page links a stylesheet');
        const cssUrl = new URL(css, 'http://local.test/v1/docs/').pathname;
        samples = [
          await send('200 list', 200, { url: '/v1/pets', headers: withKey }),
          await send('201 create', 201, {
            method: 'POST',
            url: '/v1/pets',
            headers: withKey,
            payload: { name: 'Rex', categoryId: 1 },
          }),
          await send('200 get (deprecated)', 200, { url: '/v1/pets/1', headers: withKey }),
          await send('400 validation', 400, { url: '/v1/pets?limit=0', headers: withKey }),
          await send('400 malformed URL', 400, { url: '/v1/pets/%zz', headers: withKey }),
          await send('401 no key', 401, { url: '/v1/pets', headers: origin }),
          await send('401 wrong key', 401, { url: '/v1/pets', headers: { ...origin, ...bearer('pas_x') } }),
          await send('404 unknown route, keyed', 404, { url: '/v1/nope', headers: withKey }),
          await send('404 unknown route, keyless', 404, { url: '/v1/nope', headers: origin }),
          await send('404 outside /v1', 404, { url: '/nope', headers: origin }),
          await send('405 wrong method', 405, { method: 'DELETE', url: '/v1/pets', headers: withKey }),
          await send('405 plain OPTIONS', 405, { method: 'OPTIONS', url: '/v1/pets', headers: origin }),
          await send('200 tiny quota', 200, { url: '/v1/pets', headers: { ...origin, ...bearer(tiny) } }),
          await send('429 tiny quota', 429, { url: '/v1/pets', headers: { ...origin, ...bearer(tiny) } }),
          await send('204 preflight', 204, preflight('/v1/pets', ORIGIN, 'POST')),
          await send('200 docs page', 200, { url: '/v1/docs', headers: origin }, { document: true }),
          await send('200 docs stylesheet', 200, { url: cssUrl, headers: origin }, { document: true }),
          await send(
            '200 openapi.json',
            200,
            { url: '/v1/openapi.json', headers: origin },
            { document: true },
          ),
          await send('200 openapi.json with a key', 200, { url: '/v1/openapi.json', headers: withKey }),
          await send('200 healthz', 200, { url: '/healthz', headers: origin }),
          await send('200 readyz', 200, { url: '/readyz', headers: origin }),
          await send('200 metrics', 200, { url: '/metrics', headers: origin }),
        ];
        // The keyless per-address bucket, on an app whose quota is 1.
        await strict.app.inject({ url: '/v1/pets', headers: origin });
        const limited = await strict.app.inject({ url: '/v1/pets', headers: origin });
        assert.equal(limited.statusCode, 429, limited.body);
        samples.push({ label: '429 keyless', status: 429, res: limited, keyed: false });
      } finally {
        await strict.close();
      }
    });
    after(() => ctx.close());

    test('X-Content-Type-Options: nosniff on every kind of response', () => {
      for (const { label, res } of samples)
        assert.equal(res.headers['x-content-type-options'], 'nosniff', label);
    });

    test('Cache-Control: no-store on every answer but the public documents fetched without a key', () => {
      for (const { label, res, document } of samples) {
        const cacheControl = String(res.headers['cache-control'] ?? '');
        if (document) assert.doesNotMatch(cacheControl, /no-store/, `${label} may be cached`);
        else assert.equal(cacheControl, 'no-store', label);
      }
      // Every keyed answer is among the no-store ones.
      assert.ok(samples.filter((s) => s.keyed).length >= 8);
      assert.ok(samples.filter((s) => s.keyed).every((s) => s.res.headers['cache-control'] === 'no-store'));
    });

    test('answers to a listed origin, errors included, carry Allow-Origin and expose the API headers', () => {
      for (const { label, res } of samples) assertCorsFor(res, label);
      for (const { label, res, status } of samples.filter((s) => s.status >= 400))
        assertErrorShape(res, status, label);
    });

    test('an unlisted origin or no Origin gets no CORS headers, whatever the answer', async () => {
      const requests: InjectOptions[] = [
        { url: '/v1/pets', headers: bearer(key) },
        { url: '/v1/pets' },
        { url: '/v1/nope', headers: bearer(key) },
        { url: '/v1/openapi.json' },
        { url: '/v1/pets/%zz' },
      ];
      for (const request of requests) {
        for (const origin of [OTHER, 'null', `${ORIGIN}/`, ORIGIN.toUpperCase(), undefined]) {
          const headers = { ...(request.headers as Record<string, string>), ...(origin ? { origin } : {}) };
          const res = await ctx.app.inject({ ...request, headers });
          const label = `${request.url} from ${origin}`;
          assertNoCors(res, label);
          assert.equal(res.headers['x-content-type-options'], 'nosniff', label);
          assert.ok(varyNames(res).includes('origin'), `${label}: Vary: Origin, the answer depends on it`);
        }
      }
    });

    test('a preflight from a listed origin on every /v1 route answers 204 without a key', async () => {
      const paths = v1Paths(ctx);
      assert.ok(paths.includes('/v1/pets') && paths.includes('/v1/pets/:petId'), paths.join(', '));
      for (const path of paths) {
        const url = concrete(path);
        // A plain OPTIONS (no Access-Control-Request-Method) is no preflight: still the 405 with Allow.
        const plain = await ctx.app.inject({ method: 'OPTIONS', url, headers: { origin: ORIGIN } });
        assertErrorShape(plain, 405, `plain OPTIONS ${path}`);
        const allow = String(plain.headers.allow);
        for (const method of allow.split(', ')) {
          const res = await ctx.app.inject(preflight(url, ORIGIN, method));
          const label = `preflight ${method} ${path}`;
          assert.equal(res.statusCode, 204, `${label}: ${res.body}`);
          assert.equal(res.body, '', label);
          assert.equal(res.headers['access-control-allow-origin'], ORIGIN, label);
          assert.ok(varyNames(res).includes('origin'), `${label}: Vary: Origin`);
          assert.equal(res.headers['access-control-allow-methods'], allow, `${label}: the path's methods`);
          const allowHeaders = String(res.headers['access-control-allow-headers'])
            .split(',')
            .map((h) => h.trim().toLowerCase());
          for (const name of [
            'authorization',
            'content-type',
            'idempotency-key',
            'if-match',
            'if-none-match',
          ])
            assert.ok(allowHeaders.includes(name), `${label}: allows ${name}`);
          assert.match(String(res.headers['access-control-max-age']), /^[1-9]\d*$/, label);
          assert.equal(res.headers['x-content-type-options'], 'nosniff', label);
          assert.ok(res.headers['x-request-id'], `${label}: X-Request-Id`);
          assert.equal(res.headers['www-authenticate'], undefined, `${label}: no key asked for`);
          assert.equal(res.headers['x-ratelimit-remaining'], undefined, `${label}: answered before counting`);
        }
      }
      // Any listed origin, not only the first.
      const second = await ctx.app.inject(preflight('/v1/pets', 'http://10.0.0.7:8080'));
      assert.equal(second.statusCode, 204);
      assert.equal(second.headers['access-control-allow-origin'], 'http://10.0.0.7:8080');
    });

    test('a preflight from an unlisted origin on every /v1 route is answered like any OPTIONS: 405', async () => {
      for (const path of v1Paths(ctx)) {
        const res = await ctx.app.inject(preflight(concrete(path), OTHER));
        assertErrorShape(res, 405, `preflight ${path} from ${OTHER}`);
        assert.ok(res.headers.allow, path);
        assertNoCors(res, path);
      }
      // An unknown path is no route to preflight: the usual 404, readable by the listed origin.
      const unknown = await ctx.app.inject(preflight('/v1/nope', ORIGIN));
      assertErrorShape(unknown, 404, 'preflight to an unknown path');
      assertCorsFor(unknown, 'preflight to an unknown path');
    });

    test('preflights are not counted against the address quota, even a keyless quota of 1', async () => {
      const strict = await createTestContext(backend, {
        config: { corsOrigins: [ORIGIN], unauthenticatedPerMinute: 1 },
      });
      try {
        const paths = v1Paths(strict);
        for (let round = 0; round < 3; round++) {
          for (const path of paths) {
            const res = await strict.app.inject(preflight(concrete(path), ORIGIN, 'GET'));
            assert.equal(res.statusCode, 204, path);
            assert.equal(res.headers['x-ratelimit-remaining'], undefined, `${path}: not counted`);
          }
        }
        const first = await strict.app.inject({ url: '/v1/openapi.json', headers: { origin: ORIGIN } });
        assert.equal(first.statusCode, 200, 'the one keyless request of the minute is still available');
        assert.equal(first.headers['x-ratelimit-remaining'], '0');
        const second = await strict.app.inject({ url: '/v1/openapi.json', headers: { origin: ORIGIN } });
        assert.equal(second.statusCode, 429, 'and the quota is real');
        assertCorsFor(second, 'the 429');
      } finally {
        await strict.close();
      }
    });

    test('the docs page keeps a strict CSP without upgrade-insecure-requests', async () => {
      const page = await ctx.app.inject({ url: '/v1/docs' });
      assert.equal(page.statusCode, 200);
      const css = /href="([^"]+\.css)"/.exec(page.body)?.[1];
      assert.ok(css);
      const asset = await ctx.app.inject({ url: new URL(css, 'http://local.test/v1/docs/').pathname });
      for (const [label, res] of [
        ['page', page],
        ['asset', asset],
      ] as const) {
        const csp = String(res.headers['content-security-policy'] ?? '');
        assert.doesNotMatch(csp, /upgrade-insecure-requests/i, label);
        const directives = new Map(
          csp
            .split(';')
            .map((d) => d.trim())
            .filter(Boolean)
            .map((d) => [d.split(/\s+/)[0]!.toLowerCase(), d.split(/\s+/).slice(1).join(' ')]),
        );
        assert.equal(directives.get('default-src'), "'self'", `${label}: ${csp}`);
        assert.equal(directives.get('object-src'), "'none'", label);
        assert.equal(directives.get('base-uri'), "'self'", label);
        assert.equal(directives.get('frame-ancestors'), "'self'", label);
        assert.equal(directives.get('script-src-attr'), "'none'", label);
        assert.match(String(directives.get('script-src')), /^'self'/, label);
        assert.doesNotMatch(String(directives.get('script-src')), /unsafe-inline|unsafe-eval|https:/, label);
      }
    });
  });

  describe(`headers without CORS_ORIGINS [${backend.name}]`, () => {
    let ctx: TestContext;
    before(async () => {
      ctx = await createTestContext(backend);
    });
    after(() => ctx.close());

    test('no origin gets CORS headers; a preflight is the 405 it always was', async () => {
      const res = await ctx.app.inject(preflight('/v1/pets', ORIGIN, 'POST'));
      assertErrorShape(res, 405, 'preflight');
      assertNoCors(res, 'preflight');
      const get = await ctx.app.inject({ url: '/v1/pets', headers: { origin: ORIGIN } });
      assertErrorShape(get, 401, 'keyless GET');
      assertNoCors(get, 'keyless GET');
      assert.equal(get.headers['x-content-type-options'], 'nosniff');
      assert.equal(get.headers['cache-control'], 'no-store');
    });
  });
}

describe('CORS_ORIGINS configuration', () => {
  test('default none; a comma-separated list of exact origins', () => {
    assert.deepEqual(loadConfig({}).corsOrigins, []);
    assert.deepEqual(loadConfig({ CORS_ORIGINS: '' }).corsOrigins, []);
    assert.deepEqual(
      loadConfig({ CORS_ORIGINS: ' https://app.example.com , http://localhost:5173,http://[::1]:8080' })
        .corsOrigins,
      ['https://app.example.com', 'http://localhost:5173', 'http://[::1]:8080'],
    );
  });

  test('anything that is not an exact http(s) origin is refused, naming the variable', () => {
    for (const bad of [
      '*',
      'null',
      'app.example.com',
      'https://app.example.com/',
      'https://app.example.com/path',
      'https://App.Example.com',
      'https://app.example.com:443',
      'https://user@app.example.com',
      'https://app.example.com?x=1',
      'ftp://app.example.com',
      'https://app.example.com,',
      'https://ok.example.com,not an origin',
    ]) {
      assert.throws(
        () => loadConfig({ CORS_ORIGINS: bad }),
        (error: unknown) => error instanceof ConfigError && error.variable === 'CORS_ORIGINS',
        bad,
      );
    }
  });
});
