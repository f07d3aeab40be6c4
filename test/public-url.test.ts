/**
 * PUBLIC_URL (DESIGN 4.6): unset, `Location` and `Link` are root-relative; set, they are absolute under it
 * and a client can follow them as they are. Checked on every operation that writes them (createPet,
 * placeOrder, createWebhookEndpoint; listPets, listOrders, listEvents, getPet's successor link), on every
 * backend, and the setting's validation in src/config.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../src/config.js';
import { ConfigError } from '../src/config-parsers.js';
import { backends, bearer, createTestContext, type TestContext } from './helpers.js';
import { availablePet, placeOrder } from './support/orders.js';

const PUBLIC_URL = 'https://api.example.com';

describe('PUBLIC_URL configuration', () => {
  test('unset or empty: undefined', () => {
    assert.equal(loadConfig({}).publicUrl, undefined);
    assert.equal(loadConfig({ PUBLIC_URL: ' ' }).publicUrl, undefined);
  });

  test('an absolute http(s) URL, kept without its trailing slash; a path prefix is kept', () => {
    assert.equal(loadConfig({ PUBLIC_URL: 'https://api.example.com' }).publicUrl, 'https://api.example.com');
    assert.equal(loadConfig({ PUBLIC_URL: 'https://api.example.com/' }).publicUrl, 'https://api.example.com');
    assert.equal(
      loadConfig({ PUBLIC_URL: ' http://10.0.0.5:8080/pets-api/ ' }).publicUrl,
      'http://10.0.0.5:8080/pets-api',
    );
    assert.equal(loadConfig({ PUBLIC_URL: 'HTTPS://API.Example.COM' }).publicUrl, 'https://api.example.com');
  });

  test('anything else is refused, naming PUBLIC_URL', () => {
    for (const value of [
      'api.example.com',
      '/v1',
      'ftp://api.example.com',
      'https://api.example.com/?x=1',
      'https://api.example.com/#top',
      'https://user:secret@api.example.com',
      'https://',
    ]) {
      assert.throws(
        () => loadConfig({ PUBLIC_URL: value }),
        (error: unknown) => error instanceof ConfigError && error.variable === 'PUBLIC_URL',
        value,
      );
    }
  });
});

for (const backend of await backends()) {
  for (const publicUrl of [undefined, PUBLIC_URL, `${PUBLIC_URL}/prefix`]) {
    describe(`Location and Link with PUBLIC_URL ${publicUrl ?? 'unset'} [${backend.name}]`, () => {
      let ctx: TestContext;
      let key: string;
      const base = publicUrl ?? '';

      before(async () => {
        ctx = await createTestContext(backend, {
          config: { publicUrl, webhookAllowHosts: ['127.0.0.1'] },
        });
        ({ key } = await ctx.createKey({ scopes: null }));
      });
      after(() => ctx.close());

      /** A followable target: as sent when absolute, or the path the test app is injected with. */
      const path = (target: string): string => {
        assert.ok(target.startsWith(`${base}/v1/`), `${target} starts with ${base}/v1/`);
        return target.slice(base.length);
      };

      test('createPet and a replay of it: Location names the pet', async () => {
        for (let i = 0; i < 2; i++) {
          const res = await ctx.app.inject({
            method: 'POST',
            url: '/v1/pets',
            headers: { ...bearer(key), 'idempotency-key': `public-url-${base}` },
            payload: { name: 'Rex', categoryId: 1 },
          });
          assert.equal(res.statusCode, 201, res.body);
          assert.equal(res.headers.location, `${base}/v1/pets/${res.json().id}`);
          const got = await ctx.app.inject({ url: path(String(res.headers.location)), headers: bearer(key) });
          assert.equal(got.json().id, res.json().id);
        }
      });

      test('placeOrder: Location names the order', async () => {
        const res = await placeOrder(ctx.app, key, await availablePet(ctx.app, key));
        assert.equal(res.statusCode, 201, res.body);
        assert.equal(res.headers.location, `${base}/v1/store/orders/${res.json().id}`);
      });

      test('createWebhookEndpoint: Location names the endpoint', async () => {
        const res = await ctx.app.inject({
          method: 'POST',
          url: '/v1/webhook-endpoints',
          headers: bearer(key),
          payload: { url: 'http://127.0.0.1:9/hook', events: ['*'] },
        });
        assert.equal(res.statusCode, 201, res.body);
        assert.equal(res.headers.location, `${base}/v1/webhook-endpoints/${res.json().id}`);
      });

      test('listPets, listOrders and listEvents: Link rel="next" is followable as it is', async () => {
        await availablePet(ctx.app, key);
        await placeOrder(ctx.app, key, await availablePet(ctx.app, key));
        for (const first of ['/v1/pets?limit=1', '/v1/store/orders?limit=1', '/v1/events?limit=1']) {
          const res = await ctx.app.inject({ url: first, headers: bearer(key) });
          assert.equal(res.statusCode, 200, res.body);
          const match = /^<([^>]+)>; rel="next"$/.exec(String(res.headers.link));
          assert.ok(match, `${first}: ${res.headers.link}`);
          const next = await ctx.app.inject({ url: path(match[1]!), headers: bearer(key) });
          assert.equal(next.statusCode, 200, next.body);
          assert.notDeepEqual(next.json(), res.json(), `${first}: the link leads to the next page`);
        }
      });

      test("getPet's successor-version Link", async () => {
        const id = await availablePet(ctx.app, key);
        const res = await ctx.app.inject({ url: `/v1/pets/${id}`, headers: bearer(key) });
        assert.equal(res.headers.link, `<${base}/v1/pets>; rel="successor-version"`);
      });

      test('the OpenAPI servers entry', async () => {
        const doc = (await ctx.app.inject({ url: '/v1/openapi.json' })).json();
        assert.deepEqual(
          doc.servers.map((s: { url: string }) => s.url),
          [`${base}/v1`],
        );
      });
    });
  }
}
