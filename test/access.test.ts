/**
 * Access is decided by the route that matched: every request-target form an attacker can send over a raw
 * socket reaches the same decision as the plain origin-form; a route without a declaration stops the app
 * from starting; an address guessing keys is locked out without any key lookup.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { buildApp } from '../src/app.js';
import { generateApiKey } from '../src/modules/accounts/keys.js';
import {
  backends,
  bearer,
  countPets,
  createTestContext,
  defaultTestConfig,
  sqliteMemory,
  type TestContext,
} from './helpers.js';
import { rawExchange, type RawAnswer } from './support/raw-http.js';

/** Forms of one origin-form path the router may or may not match; none may be decided differently. */
function targetForms(path: string): Record<string, string> {
  const [pathname = path, query] = path.split('?');
  const q = query === undefined ? '' : `?${query}`;
  const encoded = pathname.replace(/[a-z]/, (c) => `%${c.charCodeAt(0).toString(16)}`);
  return {
    'origin-form': path,
    'absolute-form': `http://x${path}`,
    'absolute-form, https and port': `https://attacker.example:8443${path}`,
    'absolute-form, upper-case scheme': `HTTP://X${path}`,
    'double leading slash': `/${path}`,
    'dot segment': pathname.replace('/v1/', '/v1/./') + q,
    'dot-dot segment': pathname.replace('/v1/', '/v1/../v1/') + q,
    'encoded dot-dot': pathname.replace('/v1/', '/v1/%2e%2e/v1/') + q,
    'percent-encoded letter': encoded + q,
    'percent-encoded /v1': pathname.replace('/v1/', '/%76%31/') + q,
    ';params': `${pathname};x=1${q}`,
    'upper case': pathname.toUpperCase() + q,
    'trailing slash': `${pathname}/${q}`,
    'empty query': `${pathname}?`,
    fragment: `${path}#frag`,
  };
}

/** The forms the router reads as the origin-form's own route: the ones that bypassed access before. */
const SAME_ROUTE = new Set([
  'origin-form',
  'absolute-form',
  'absolute-form, https and port',
  'absolute-form, upper-case scheme',
  'percent-encoded letter',
  'percent-encoded /v1',
  'empty query',
]);

function send(port: number, method: string, target: string, headers: Record<string, string>, body?: string) {
  const lines = [`${method} ${target} HTTP/1.1`, 'Host: service.test', 'Connection: close'];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  if (body !== undefined) {
    lines.push('Content-Type: application/json', `Content-Length: ${Buffer.byteLength(body)}`);
  }
  return rawExchange(port, `${lines.join('\r\n')}\r\n\r\n${body ?? ''}`).then((answer) => ({
    ...answer,
    // 0: the connection closed without a status line, which no assertion below accepts.
    status: answer.status ?? 0,
  }));
}

function assertErrorShape(
  res: Pick<RawAnswer, 'headers' | 'body'> & { status: number },
  label: string,
): void {
  assert.match(res.headers['content-type'] ?? '', /^application\/json\b/, `${label}: content-type`);
  const body = JSON.parse(res.body) as { code: unknown; message: unknown; status: unknown };
  assert.equal(body.status, res.status, `${label}: status field`);
  assert.equal(typeof body.code, 'string', label);
  assert.equal(typeof body.message, 'string', label);
  assert.ok(res.headers['x-request-id'], `${label}: X-Request-Id`);
  assert.match(res.headers['x-ratelimit-remaining'] ?? '', /^\d+$/, `${label}: rate-limit headers`);
}

for (const backend of await backends()) {
  describe(`access by matched route, over raw sockets [${backend.name}]`, () => {
    let ctx: TestContext;
    let port: number;
    let key: string;

    before(async () => {
      // Many keyless requests from one address: a quota high enough that only the decision under test shows.
      ctx = await createTestContext(backend, {
        config: { unauthenticatedPerMinute: 1_000_000, authFailuresPerMinute: 1_000_000 },
      });
      await ctx.app.listen({ port: 0, host: '127.0.0.1' });
      port = (ctx.app.server.address() as AddressInfo).port;
      ({ key } = await ctx.createKey());
    });
    after(() => ctx.close());

    const operations: { method: string; path: string; body?: string }[] = [
      { method: 'GET', path: '/v1/pets?limit=2' },
      { method: 'GET', path: '/v1/pets/1' },
      { method: 'GET', path: '/v1/categories' },
      { method: 'POST', path: '/v1/pets', body: JSON.stringify({ name: 'Raw Rex', categoryId: 1 }) },
    ];

    for (const op of operations) {
      test(`${op.method} ${op.path}: every target form without a key is refused or unrouted, never served`, async () => {
        const before = await countPets(ctx.database);
        for (const [form, target] of Object.entries(targetForms(op.path))) {
          const variants: Record<string, string>[] = [
            {},
            { 'Idempotency-Key': `raw-${form}` },
            { Authorization: 'Bearer nope' },
          ];
          for (const headers of variants) {
            const label = `${op.method} ${target} (${form}) ${JSON.stringify(headers)}`;
            const res = await send(port, op.method, target, headers, op.body);
            assert.ok([400, 401, 404, 405].includes(res.status), `${label}: ${res.status} ${res.body}`);
            assertErrorShape(res, label);
            if (res.status === 401) assert.match(res.headers['www-authenticate'] ?? '', /^Bearer\b/, label);
          }
        }
        assert.equal(await countPets(ctx.database), before, 'no pet was created without a key');
      });

      test(`${op.method} ${op.path}: forms naming the same route get the origin-form's answer with a key`, async () => {
        const origin = await send(port, op.method, op.path, bearer(key), op.body);
        assert.ok((origin.status >= 200 && origin.status < 300) || origin.status === 404, origin.body);
        for (const [form, target] of Object.entries(targetForms(op.path))) {
          const label = `${op.method} ${target} (${form})`;
          const keyed = await send(port, op.method, target, bearer(key), op.body);
          assert.ok(keyed.status < 500, `${label}: ${keyed.status} ${keyed.body}`);
          if (SAME_ROUTE.has(form)) assert.equal(keyed.status, origin.status, `${label}: ${keyed.body}`);
          // Other forms may name another route (`/v1/pets/` is getPet with an empty id) or none: that route's
          // declaration decides, and the keyless test above shows none of them serves without a key.
          if (keyed.status >= 400) assertErrorShape(keyed, label);
        }
      });
    }

    test('absolute-form POST with Idempotency-Key and no key is a 401, not a 500', async () => {
      const res = await send(
        port,
        'POST',
        'http://x/v1/pets',
        { 'Idempotency-Key': 'abs-1' },
        '{"name":"A","categoryId":1}',
      );
      assert.equal(res.status, 401, res.body);
      assert.equal(JSON.parse(res.body).code, 'missing_api_key');
    });
  });
}

describe('every route declares its access', () => {
  test('a route without a declaration stops the app from starting', async () => {
    for (const url of ['/v1/undeclared', '/outside-v1']) {
      const database = await sqliteMemory.createDatabase();
      await database.migrate();
      const counterStore = await sqliteMemory.createCounterStore();
      const app = await buildApp({ config: defaultTestConfig, database, counterStore });
      app.get(url, async () => ({ leaked: true }));
      await assert.rejects(
        async () => app.ready().then(() => undefined),
        new RegExp(`declare no access.*GET[^;]* ${url}`),
      );
      await app.close().catch(() => {});
      await counterStore.close();
      await database.close();
    }
  });

  test('a route needing a scope no module declares stops the app from starting', async () => {
    const database = await sqliteMemory.createDatabase();
    await database.migrate();
    const counterStore = await sqliteMemory.createCounterStore();
    const app = await buildApp({ config: defaultTestConfig, database, counterStore });
    app.get('/v1/misspelt', { config: { access: { scopes: ['pets:raed'] } } }, async () => ({}));
    await assert.rejects(
      async () => app.ready().then(() => undefined),
      /scopes no module declares.*GET[^;]* \/v1\/misspelt \(pets:raed\)/,
    );
    await app.close().catch(() => {});
    await counterStore.close();
    await database.close();
  });

  test('a declared route starts and is protected by its declaration', async () => {
    const database = await sqliteMemory.createDatabase();
    await database.migrate();
    const counterStore = await sqliteMemory.createCounterStore();
    const app = await buildApp({ config: defaultTestConfig, database, counterStore });
    app.get('/v1/declared', { config: { access: { scopes: ['pets:read'] } } }, async () => ({ ok: true }));
    await app.ready();
    const res = await app.inject({ url: 'http://x/v1/declared' });
    assert.equal(res.statusCode, 401);
    await app.close();
    await counterStore.close();
    await database.close();
  });
});

for (const backend of await backends()) {
  describe(`failed-authentication lockout [${backend.name}]`, () => {
    let ctx: TestContext;
    let lookups = 0;

    before(async () => {
      ctx = await createTestContext(backend, {
        config: { authFailuresPerMinute: 5, unauthenticatedPerMinute: 1_000 },
      });
      // Observe key lookups on the real repository: a locked-out request must not reach it.
      const find = ctx.accounts.findKeyByHash.bind(ctx.accounts);
      ctx.accounts.findKeyByHash = (hash) => {
        lookups++;
        return find(hash);
      };
    });
    after(() => ctx.close());

    test('more invalid keys than the threshold lock the address out for the rest of the minute', async () => {
      const { key } = await ctx.createKey();
      ctx.clock.set(Date.UTC(2026, 5, 15, 12, 0, 10));
      const guess = () => ctx.app.inject({ url: '/v1/pets', headers: bearer(generateApiKey()) });
      for (let i = 0; i < 5; i++)
        assert.equal((await guess()).json().code, 'invalid_api_key', `guess ${i + 1}`);
      const tripped = await guess();
      assert.equal(tripped.statusCode, 429, tripped.body);
      assert.equal(tripped.json().code, 'too_many_invalid_keys');

      const lookupsBefore = lookups;
      const correct = await ctx.app.inject({ url: '/v1/pets', headers: bearer(key) });
      assert.equal(correct.statusCode, 429, 'even a correct key is refused while locked out');
      assert.equal(correct.json().code, 'too_many_invalid_keys');
      assert.equal(correct.headers['retry-after'], '50', 'until the minute ends');
      assert.match(String(correct.headers['x-ratelimit-remaining']), /^\d+$/);
      const malformed = await ctx.app.inject({ url: '/v1/pets', headers: { authorization: 'Bearer x' } });
      assert.equal(malformed.statusCode, 429);
      assert.equal(lookups, lookupsBefore, 'no key was looked up while locked out');

      const keyless = await ctx.app.inject({ url: '/v1/pets' });
      assert.equal(keyless.json().code, 'missing_api_key', 'requests without a key are not locked out');

      ctx.clock.set(Date.UTC(2026, 5, 15, 12, 1, 0));
      const nextMinute = await ctx.app.inject({ url: '/v1/pets', headers: bearer(key) });
      assert.equal(nextMinute.statusCode, 200, 'the lockout ends with the minute');
    });

    test('a lockout does not reach other addresses', async () => {
      const { key } = await ctx.createKey();
      ctx.clock.set(Date.UTC(2026, 5, 15, 12, 5, 0));
      for (let i = 0; i < 6; i++) {
        await ctx.app.inject({
          url: '/v1/pets',
          headers: bearer(generateApiKey()),
          remoteAddress: '10.0.0.9',
        });
      }
      const locked = await ctx.app.inject({
        url: '/v1/pets',
        headers: bearer(key),
        remoteAddress: '10.0.0.9',
      });
      assert.equal(locked.statusCode, 429);
      const other = await ctx.app.inject({
        url: '/v1/pets',
        headers: bearer(key),
        remoteAddress: '10.0.0.10',
      });
      assert.equal(other.statusCode, 200);
    });
  });
}
