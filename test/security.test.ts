/**
 * One security suite applied to every protected route. The route list is derived from the served OpenAPI
 * document, and a router walk checks that every /v1 route is either documented-and-protected, a 405
 * catch-all, or on the explicit public list, so a new route cannot escape this suite. Request bodies and
 * path parameters come from each module's fixture (src/modules/<module>/fixtures.ts): a path parameter is a real
 * id of its own resource, so "the valid key works" reaches the handler and answers 2xx.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { generateApiKey } from '../src/modules/accounts/keys.js';
import type { Scope } from '../src/modules/accounts/scopes.js';
import { MODULES } from '../src/modules/index.js';
import { fixturePath, loadFixtures, moduleFixtures, type Fixtures } from './support/fixtures.js';
import { backends, bearer, createTestContext, routerTable, type TestContext } from './helpers.js';
import { assert401, assertRateLimitHeaders } from './support/assertions.js';
import { declaredScopes, scopesLacking } from './support/scopes.js';

/**
 * Routes under /v1 served without a key: the document and its page, and the operations the modules' fixtures
 * declare keyless (photo renderings: unguessable ids, immutable bytes an <img> loads without a key), as
 * router paths. Anything else under /v1 must demand one.
 */
function publicV1(doc: OpenApiDoc, keyless: readonly string[]): RegExp[] {
  const prefix = serverPrefix(doc);
  const paths = keyless.map((operationId) => {
    const path = Object.entries(doc.paths).find(([, item]) =>
      Object.values(item).some((op) => op.operationId === operationId),
    )?.[0];
    assert.ok(path, `the keyless operation ${operationId} is documented`);
    const router = (prefix + path).replace(/\{(\w+)\}/g, ':$1').replace(/[.*+?^$()|[\]\\]/g, '\\$&');
    return new RegExp(`^${router}$`);
  });
  return [/^\/v1\/openapi\.json$/, /^\/v1\/docs(\/.*)?$/, ...paths];
}

/** The protected operations the spec and the design name; the derived list must contain at least these. */
const KNOWN_PROTECTED = ['GET /v1/pets', 'POST /v1/pets', 'GET /v1/pets/{petId}', 'GET /v1/categories'];

interface ProtectedRoute {
  label: string;
  operationId: string;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  template: string;
  url: string;
  /** What its `security` requirement in the served document says it needs. */
  scopes: Scope[];
  body?: unknown;
  /** The media type its body is sent as. */
  contentType?: string;
}

type SecurityRequirement = Record<string, string[]>;
type OpenApiDoc = {
  servers?: { url: string }[];
  paths: Record<
    string,
    Record<string, { operationId?: string; requestBody?: unknown; security?: SecurityRequirement[] }>
  >;
  security?: SecurityRequirement[];
};

const HTTP_METHODS = new Set(['get', 'post', 'put', 'patch', 'delete']);

function serverPrefix(doc: OpenApiDoc): string {
  return (doc.servers?.[0]?.url ?? '').replace(/\/$/, '');
}

/** A URL for a route template: every `{param}` replaced by a real id from the fixtures. */
async function withIds(template: string, fixtures: Fixtures): Promise<string> {
  let url = template;
  for (const [whole, param] of template.matchAll(/\{(\w+)\}/g)) {
    const id = await fixtures.id(param!);
    url = url.replace(whole, encodeURIComponent(id));
  }
  return url;
}

/** Every operation of the served document whose effective security is not empty. */
async function protectedRoutes(doc: OpenApiDoc, fixtures: Fixtures): Promise<ProtectedRoute[]> {
  const prefix = serverPrefix(doc);
  const routes: ProtectedRoute[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!HTTP_METHODS.has(method)) continue;
      const security = op.security ?? doc.security ?? [];
      if (security.length === 0) continue;
      const operationId = op.operationId ?? `${method} ${path}`;
      const url = await withIds(prefix + path, fixtures);
      const route: ProtectedRoute = {
        label: `${method.toUpperCase()} ${prefix}${path}`,
        operationId,
        method: method.toUpperCase() as ProtectedRoute['method'],
        template: prefix + path,
        url,
        scopes: declaredScopes(security),
      };
      if (op.requestBody) {
        route.body = fixtures.body(operationId);
        // The first media type the operation takes (an upload's is an image type, not JSON).
        route.contentType = Object.keys((op.requestBody as { content: object }).content)[0];
      }
      routes.push(route);
    }
  }
  return routes;
}

for (const backend of await backends()) {
  // Built before the suite is declared, so that each protected route of the served document gets its own tests.
  // High unauthenticated and failed-key quotas: this suite sends many keyless and wrong-key requests from one
  // address (test/access.test.ts covers the lockout).
  const ctx: TestContext = await createTestContext(backend, {
    // Every valid placeOrder holds a pet, every valid createWebhookEndpoint an endpoint, for the suite's
    // account: no open-order or endpoint limit here.
    config: {
      unauthenticatedPerMinute: 100_000,
      authFailuresPerMinute: 100_000,
      maxOpenOrders: 1_000_000,
      maxWebhookEndpoints: 10_000,
    },
  });
  // Resources some modules make are the account's own (webhook endpoints): keys that must succeed on the
  // fixtures' ids belong to the same account.
  const SUITE_ACCOUNT = 'security-suite';
  const { key } = await ctx.createKey({ name: SUITE_ACCOUNT });
  const fixtures = await loadFixtures(ctx.app, key, ctx.database);
  const doc: OpenApiDoc = (await ctx.app.inject({ url: '/v1/openapi.json' })).json();
  const routes = await protectedRoutes(doc, fixtures);
  const PUBLIC_V1 = publicV1(
    doc,
    [...(await moduleFixtures()).values()].flatMap((fixture) => fixture.keyless ?? []),
  );

  describe(`security [${backend.name}]`, () => {
    after(() => ctx.close());

    test('every module has its fixture file in its folder', () => {
      for (const module of MODULES) {
        assert.ok(fixtures.modules.includes(module.name), `add ${fixturePath(module.name)}`);
      }
    });

    test('the derived route list covers every protected route the spec names', () => {
      const labels = routes.map((r) => r.label);
      for (const known of KNOWN_PROTECTED)
        assert.ok(labels.includes(known), `${known} is in ${labels.join(', ')}`);
    });

    test('no /v1 route escapes: each is documented and protected, a 405 catch-all, or explicitly public', async () => {
      const table = routerTable(ctx.app.printRoutes({ commonPrefix: false }));
      assert.ok(table.length > 0, 'router table parsed');
      const documented = new Set(routes.map((r) => `${r.method} ${r.template}`));
      const seen = new Set<string>();
      for (const { path, methods } of table) {
        if (!path.startsWith('/v1')) continue;
        const template = path.replace(/:(\w+)/g, '{$1}').replace(/\*$/, 'anything');
        const url = await withIds(template, fixtures);
        for (const method of methods) {
          if (method === 'HEAD' || method === 'OPTIONS') continue;
          const label = `${method} ${path}`;
          const res = await ctx.app.inject({ method: method as 'GET', url });
          if (PUBLIC_V1.some((re) => re.test(path))) {
            // Public: never a 401 (a wildcard static route may well answer 404 for a made-up file name).
            assert.ok(
              res.statusCode !== 401 && res.statusCode < 500,
              `${label} is public: ${res.statusCode}`,
            );
            continue;
          }
          if (res.statusCode === 405) {
            assert.equal(res.json().code, 'method_not_allowed', label);
            assert.ok(res.headers.allow, `${label}: Allow`);
            continue;
          }
          assert401(res, 'missing_api_key', `${label} without a key`);
          assert.ok(
            documented.has(`${method} ${template}`),
            `${label} is protected but not in the security suite's list`,
          );
          seen.add(`${method} ${template}`);
        }
      }
      assert.deepEqual(
        [...documented].filter((d) => !seen.has(d)),
        [],
        'every documented operation is routed',
      );
    });

    for (const route of routes) {
      describe(route.label, () => {
        // Made anew per request where a valid call uses its ids or body up (its fixture's `fresh`).
        const send = async (headers: Record<string, string>) => {
          const { url, body } = await fixtures.request(route.operationId, route.template);
          return ctx.app.inject({
            method: route.method,
            url,
            headers: route.contentType ? { 'content-type': route.contentType, ...headers } : headers,
            ...(route.body === undefined ? {} : { payload: body as object }),
          });
        };

        test('missing Authorization → 401 missing_api_key', async () => {
          assert401(await send({}), 'missing_api_key', route.label);
          assert401(await send({ authorization: '' }), 'missing_api_key', `${route.label} (empty header)`);
        });

        test('malformed Authorization → 401 malformed_api_key', async () => {
          const valid = generateApiKey();
          const last = valid.at(-1)!;
          const badChecksum = valid.slice(0, -1) + (last === 'A' ? 'B' : 'A');
          const cases: Record<string, string> = {
            'Basic scheme': `Basic ${Buffer.from(`user:${key}`).toString('base64')}`,
            'Basic with the key': `Basic ${key}`,
            'Bearer without token': 'Bearer',
            'Bearer and spaces': 'Bearer   ',
            'garbage token': 'Bearer not-a-real-key',
            'key without scheme': key,
            'two tokens': `Bearer ${key} ${key}`,
            'bad checksum': `Bearer ${badChecksum}`,
            'wrong prefix': `Bearer xyz_${valid.slice(4)}`,
            'truncated key': `Bearer ${valid.slice(0, -2)}`,
          };
          for (const [name, authorization] of Object.entries(cases)) {
            assert401(await send({ authorization }), 'malformed_api_key', `${route.label}: ${name}`);
          }
        });

        test('well-formed unknown key → 401 invalid_api_key', async () => {
          assert401(await send(bearer(generateApiKey())), 'invalid_api_key', route.label);
        });

        test('revoked key → 401 revoked_api_key', async () => {
          const { key: revoked, id } = await ctx.createKey();
          assert.ok(await ctx.accounts.revokeKey(id, ctx.clock.now));
          assert401(await send(bearer(revoked)), 'revoked_api_key', route.label);
        });

        test('expired key → 401 expired_api_key; a key not yet expired works', async () => {
          const { key: expired } = await ctx.createKey({ expiresAt: ctx.clock.now - 1 });
          assert401(await send(bearer(expired)), 'expired_api_key', route.label);
          const { key: expiresAtNow } = await ctx.createKey({ expiresAt: ctx.clock.now });
          assert401(await send(bearer(expiresAtNow)), 'expired_api_key', `${route.label} (expiry instant)`);
          const { key: later } = await ctx.createKey({
            name: SUITE_ACCOUNT,
            expiresAt: ctx.clock.now + 60_000,
          });
          const res = await send(bearer(later));
          assert.ok(
            res.statusCode >= 200 && res.statusCode < 300,
            `${route.label}: ${res.statusCode} ${res.body}`,
          );
        });

        test('its security requirement names at least one scope', () => {
          assert.ok(route.scopes.length > 0, `${route.label}: ${JSON.stringify(route.scopes)}`);
        });

        // The scope matrix (DESIGN 4.1), from what the served document declares: this also checks that the
        // document's `security` is what the access hook enforces.
        test('a key holding exactly the declared scopes is not refused for scope', async () => {
          const { key: exact } = await ctx.createKey({ scopes: route.scopes });
          const res = await send(bearer(exact));
          assert.notEqual(res.statusCode, 403, `${route.label} with ${route.scopes.join(' ')}: ${res.body}`);
          assert.ok(
            res.statusCode < 500 && res.statusCode !== 401,
            `${route.label}: ${res.statusCode} ${res.body}`,
          );
          assert.equal(res.headers['www-authenticate'], undefined, route.label);
        });

        test('a key with every scope but those granting the declared ones → 403 insufficient_scope naming them', async () => {
          const others = scopesLacking(route.scopes);
          const { key: lacking } = await ctx.createKey({ scopes: others });
          const res = await send(bearer(lacking));
          const label = `${route.label} with ${others.join(' ')}`;
          assert.equal(res.statusCode, 403, `${label}: ${res.body}`);
          assert.match(String(res.headers['content-type']), /^application\/json\b/, label);
          const body = res.json();
          assert.deepEqual(body, { code: 'insufficient_scope', message: body.message, status: 403 }, label);
          for (const scope of route.scopes)
            assert.ok(body.message.includes(scope), `${label}: ${body.message}`);
          assert.equal(
            res.headers['www-authenticate'],
            `Bearer realm="pet-adoption", error="insufficient_scope", scope="${route.scopes.join(' ')}"`,
            label,
          );
          assert.ok(res.headers['x-request-id'], label);
          assertRateLimitHeaders(res, label);
        });

        test('the scheme is case-insensitive and the valid key works', async () => {
          for (const scheme of ['Bearer', 'bearer', 'BEARER', 'bEaReR']) {
            const res = await send({ authorization: `${scheme} ${key}` });
            assert.ok(
              res.statusCode >= 200 && res.statusCode < 300,
              `${route.label} with ${scheme}: ${res.statusCode} ${res.body}`,
            );
            assert.equal(res.headers['www-authenticate'], undefined);
            assertRateLimitHeaders(res, route.label);
          }
        });
      });
    }

    describe('public routes need no key', () => {
      test('/v1/openapi.json is the OpenAPI document', async () => {
        const res = await ctx.app.inject({ url: '/v1/openapi.json' });
        assert.equal(res.statusCode, 200);
        assert.match(String(res.headers['content-type']), /^application\/json\b/);
        assert.match(res.json().openapi, /^3\.1\./);
      });

      test('/v1/docs is an HTML page whose scripts and styles are served locally, with no CDN', async () => {
        let res = await ctx.app.inject({ url: '/v1/docs' });
        if (res.statusCode >= 300 && res.statusCode < 400) {
          res = await ctx.app.inject({
            url: new URL(String(res.headers.location), 'http://x/v1/docs').pathname,
          });
        }
        assert.equal(res.statusCode, 200);
        assert.match(String(res.headers['content-type']), /^text\/html\b/);
        const html = res.body;
        assert.doesNotMatch(
          html,
          /(?:src|href)\s*=\s*["']?(?:https?:)?\/\//i,
          'no absolute or protocol-relative asset URL',
        );
        assert.doesNotMatch(html, /unpkg|jsdelivr|cdnjs|googleapis|cloudflare/i);

        const assets = [...html.matchAll(/(?:src|href)\s*=\s*["']([^"']+)["']/gi)].map((m) => m[1]!);
        const scripts = assets.filter((a) => /\.js(\?|$)/.test(a));
        const styles = assets.filter((a) => /\.css(\?|$)/.test(a));
        assert.ok(scripts.length > 0, 'the page loads scripts');
        assert.ok(styles.length > 0, 'the page loads styles');
        for (const asset of assets) {
          const path = new URL(asset, 'http://local.test/v1/docs/').pathname;
          const got = await ctx.app.inject({ url: path });
          assert.equal(got.statusCode, 200, `${asset} is served locally`);
          if (scripts.includes(asset)) assert.match(String(got.headers['content-type']), /javascript/, asset);
          if (styles.includes(asset)) {
            assert.match(String(got.headers['content-type']), /^text\/css\b/, asset);
            assert.doesNotMatch(
              got.body,
              /@import\s+(?:url\()?["']?(?:https?:)?\/\//i,
              `${asset} imports nothing remote`,
            );
            assert.doesNotMatch(
              got.body,
              /url\(\s*["']?(?:https?:)?\/\//i,
              `${asset} loads no remote fonts or images`,
            );
          }
        }
        // The page's own start-up script: it must point at local documents and not call an online validator.
        for (const script of scripts.filter((s) => /initializer/.test(s))) {
          const body = (await ctx.app.inject({ url: new URL(script, 'http://local.test/v1/docs/').pathname }))
            .body;
          assert.doesNotMatch(
            body,
            /["'`](?:https?:)?\/\/[^"'`]*["'`]/,
            `${script} references no remote URL`,
          );
          assert.match(body, /validatorUrl:\s*null/, `${script} disables the online validator`);
        }
      });

      test('/healthz and /readyz answer without a key', async () => {
        const health = await ctx.app.inject({ url: '/healthz' });
        assert.equal(health.statusCode, 200);
        assert.equal(health.json().status, 'ok');
        const ready = await ctx.app.inject({ url: '/readyz' });
        assert.equal(ready.statusCode, 200);
        assert.equal(ready.json().status, 'ready');
        for (const res of [health, ready]) assert.ok(res.headers['x-request-id']);
      });

      test('/metrics is Prometheus text', async () => {
        const res = await ctx.app.inject({ url: '/metrics' });
        assert.equal(res.statusCode, 200);
        assert.match(String(res.headers['content-type']), /^text\/plain\b.*version=0\.0\.4/);
        assert.match(res.body, /^# HELP \w+ /m);
        assert.match(res.body, /^# TYPE \w+ (counter|gauge|histogram|summary)$/m);
        assert.match(
          res.body,
          /^pet_adoption_http_request_duration_seconds_bucket\{/m,
          'request metrics are recorded',
        );
      });

      test('public routes ignore a bad key instead of rejecting it', async () => {
        for (const url of ['/v1/openapi.json', '/healthz', '/readyz', '/metrics']) {
          const res = await ctx.app.inject({ url, headers: { authorization: 'Bearer garbage' } });
          assert.equal(res.statusCode, 200, url);
        }
      });
    });
  });
}
