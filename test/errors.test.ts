/**
 * The error contract for everything under /v1: whatever goes wrong, the client gets the Error shape
 * `{ code, message, status }` with `status` equal to the HTTP status, `application/json`, an X-Request-Id,
 * and the rate-limit headers. Internal faults are produced by fault injection: a real database with one
 * repository method replaced by one that throws (test/support/faults.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { StorageUnavailableError } from '../src/db/database.js';
import { errorCatalogue as httpErrors } from '../src/http/errors.js';
import { errorCatalogueOf } from '../src/modules/declared.js';
import { MODULES } from '../src/modules/index.js';
import { accountRepository } from '../src/modules/accounts/repository.js';
import { categoryRepository } from '../src/modules/categories/repository.js';
import { petRepository } from '../src/modules/pets/repository.js';
import { backends, bearer, countPets, createTestContext, type TestContext } from './helpers.js';
import { assertErrorShape, assertRateLimitHeaders, assertV1Error } from './support/assertions.js';
import { failAfterPetInsert, faultyApp, type Fault, type FaultyApp } from './support/faults.js';

/** The one error catalogue: the HTTP layer's codes and every module's. */
const errorCatalogue = errorCatalogueOf(MODULES);

for (const backend of await backends()) {
  describe(`errors [${backend.name}]`, () => {
    let ctx: TestContext;
    let key: string;
    const auth = () => bearer(key);
    const inject = (options: InjectOptions) => ctx.app.inject(options);

    before(async () => {
      ctx = await createTestContext(backend, { config: { unauthenticatedPerMinute: 100_000 } });
      ({ key } = await ctx.createKey());
    });
    after(() => ctx.close());

    test('unknown routes under /v1 → 404 not_found, with or without a key', async () => {
      for (const url of [
        '/v1/nope',
        '/v1/pets/1/extra',
        '/v1/store/nope',
        '/v1',
        '/v1/',
        '/v1/categories/1',
        '/v2/pets',
      ]) {
        assertErrorShape(await inject({ url }), 404, 'not_found', `${url} without key`);
        const res = await inject({ url, headers: auth() });
        if (url.startsWith('/v1')) assertV1Error(res, 404, 'not_found', url);
        else assertErrorShape(res, 404, 'not_found', url);
      }
      // With a bad key an unknown route is still a 404, not a 401: the route's existence is what is wrong.
      assertV1Error(
        await inject({ url: '/v1/nope', headers: { authorization: 'Bearer junk' } }),
        404,
        'not_found',
        'junk key',
      );
    });

    test('wrong methods → 405 method_not_allowed with an Allow header, with or without a key', async () => {
      const cases: [InjectOptions['method'], string, string[]][] = [
        ['DELETE', '/v1/pets', ['GET', 'POST']],
        ['PUT', '/v1/pets', ['GET', 'POST']],
        ['PATCH', '/v1/pets', ['GET', 'POST']],
        ['POST', '/v1/pets/1', ['DELETE', 'GET', 'PATCH']],
        ['PUT', '/v1/pets/1', ['DELETE', 'GET', 'PATCH']],
        ['POST', '/v1/categories', ['GET']],
        ['DELETE', '/v1/categories', ['GET']],
      ];
      for (const [method, url, allowed] of cases) {
        for (const headers of [auth(), {}]) {
          const label = `${method} ${url}${'authorization' in headers ? '' : ' (no key)'}`;
          const res = await inject({
            method,
            url,
            headers,
            payload: method === 'DELETE' ? undefined : { name: 'x' },
          });
          assertV1Error(res, 405, 'method_not_allowed', label);
          const allow = String(res.headers.allow).split(/,\s*/);
          for (const m of allowed)
            assert.ok(allow.includes(m), `${label}: Allow ${res.headers.allow} has ${m}`);
          assert.ok(!allow.includes(method!), `${label}: Allow does not list ${method}`);
        }
      }
    });

    test('non-JSON bodies → 415 unsupported_media_type, and nothing is created', async () => {
      const before = await countPets(ctx.database);
      const cases: [string | undefined, string][] = [
        ['text/plain', '{"name":"Rex","categoryId":1}'],
        ['application/x-www-form-urlencoded', 'name=Rex&categoryId=1'],
        [
          'multipart/form-data; boundary=xyz',
          '--xyz\r\nContent-Disposition: form-data; name="name"\r\n\r\nRex\r\n--xyz--',
        ],
        ['application/xml', '<pet><name>Rex</name></pet>'],
        ['application/merge-patch+json', '{"name":"Rex","categoryId":1}'],
        [undefined, '{"name":"Rex","categoryId":1}'],
      ];
      for (const [type, payload] of cases) {
        const headers: Record<string, string> = { ...auth() };
        if (type) headers['content-type'] = type;
        assertV1Error(
          await inject({ method: 'POST', url: '/v1/pets', headers, payload }),
          415,
          'unsupported_media_type',
          String(type),
        );
      }
      assert.equal(await countPets(ctx.database), before);
    });

    test('JSON media type parameters and case are accepted', async () => {
      for (const type of ['application/json', 'application/json; charset=utf-8', 'Application/JSON']) {
        const res = await inject({
          method: 'POST',
          url: '/v1/pets',
          headers: { ...auth(), 'content-type': type },
          payload: '{"name":"Typed","categoryId":1}',
        });
        assert.equal(res.statusCode, 201, `${type}: ${res.body}`);
      }
    });

    test('bodies over 16 KiB → 413 payload_too_large; just under the limit is parsed', async () => {
      const before = await countPets(ctx.database);
      const big = JSON.stringify({ name: 'x'.repeat(17 * 1024), categoryId: 1 });
      assertV1Error(
        await inject({
          method: 'POST',
          url: '/v1/pets',
          headers: { ...auth(), 'content-type': 'application/json' },
          payload: big,
        }),
        413,
        'payload_too_large',
        '17 KiB',
      );
      const huge = JSON.stringify({ name: 'Rex', categoryId: 1, pad: 'y'.repeat(1024 * 1024) });
      assertV1Error(
        await inject({
          method: 'POST',
          url: '/v1/pets',
          headers: { ...auth(), 'content-type': 'application/json' },
          payload: huge,
        }),
        413,
        'payload_too_large',
        '1 MiB',
      );
      // 16 KiB exactly: within the limit, so the body is parsed and then rejected for its over-long name.
      const prefix = '{"categoryId":1,"name":"';
      const exact = prefix + 'z'.repeat(16 * 1024 - prefix.length - 2) + '"}';
      assert.equal(Buffer.byteLength(exact), 16 * 1024);
      assertV1Error(
        await inject({
          method: 'POST',
          url: '/v1/pets',
          headers: { ...auth(), 'content-type': 'application/json' },
          payload: exact,
        }),
        400,
        'validation_failed',
        '16 KiB exactly',
      );
      assert.equal(await countPets(ctx.database), before);
    });

    test('malformed JSON → 400 invalid_json', async () => {
      for (const payload of [
        '{',
        '{"name":',
        "{'name':'Rex'}",
        '{"name":"Rex",}',
        'nul',
        '{"a":1}}',
        '\u00ff\u00fe',
        '[1,2',
      ]) {
        const res = await inject({
          method: 'POST',
          url: '/v1/pets',
          headers: { ...auth(), 'content-type': 'application/json' },
          payload,
        });
        assertV1Error(res, 400, 'invalid_json', JSON.stringify(payload));
      }
    });

    test('an empty JSON body → 400, as does a missing body; JSON that is not an object → 400 validation_failed', async () => {
      for (const payload of ['', '   ']) {
        const res = await inject({
          method: 'POST',
          url: '/v1/pets',
          headers: { ...auth(), 'content-type': 'application/json' },
          payload,
        });
        assertV1Error(res, 400, 'invalid_json', `empty body ${JSON.stringify(payload)}`);
      }
      assertV1Error(
        await inject({ method: 'POST', url: '/v1/pets', headers: auth() }),
        400,
        /^(validation_failed|invalid_json)$/,
        'no body',
      );
      for (const payload of ['null', '[]', '"Rex"', '42', 'true', '{}']) {
        const res = await inject({
          method: 'POST',
          url: '/v1/pets',
          headers: { ...auth(), 'content-type': 'application/json' },
          payload,
        });
        assertV1Error(res, 400, 'validation_failed', payload);
      }
    });

    test('__proto__ and constructor.prototype payloads → 400, create nothing, pollute nothing', async () => {
      const before = await countPets(ctx.database);
      const payloads = [
        '{"__proto__":{"admin":true},"name":"Rex","categoryId":1}',
        '{"name":"Rex","categoryId":1,"__proto__":{"status":"sold"}}',
        '{"constructor":{"prototype":{"admin":true}},"name":"Rex","categoryId":1}',
        '{"name":{"__proto__":{"length":1}},"categoryId":1}',
        '[{"__proto__":{"admin":true}}]',
      ];
      for (const payload of payloads) {
        const res = await inject({
          method: 'POST',
          url: '/v1/pets',
          headers: { ...auth(), 'content-type': 'application/json' },
          payload,
        });
        assertV1Error(res, 400, /^(invalid_json|validation_failed)$/, payload);
      }
      assert.equal(({} as Record<string, unknown>).admin, undefined, 'Object.prototype is untouched');
      assert.equal(await countPets(ctx.database), before);
    });

    test('malformed URLs → 400 in the Error shape, with a request id', async () => {
      for (const url of ['/v1/pets/%zz', '/v1/pets/%', '/v1/%E0%A4%A']) {
        assertErrorShape(await inject({ url, headers: auth() }), 400, 'bad_request', url);
      }
    });

    test('malformed URLs also carry the rate-limit headers', async () => {
      assertRateLimitHeaders(await inject({ url: '/v1/pets/%zz', headers: auth() }), '/v1/pets/%zz');
    });

    test('a safe incoming X-Request-Id is echoed on errors; an unsafe one is replaced', async () => {
      const requests: InjectOptions[] = [
        { url: '/v1/pets' },
        { url: '/v1/nope', headers: auth() },
        { method: 'DELETE', url: '/v1/pets', headers: auth() },
        {
          method: 'POST',
          url: '/v1/pets',
          headers: { ...auth(), 'content-type': 'application/json' },
          payload: '{',
        },
        {
          method: 'POST',
          url: '/v1/pets',
          headers: { ...auth(), 'content-type': 'text/plain' },
          payload: 'x',
        },
        { url: '/v1/pets/abc', headers: auth() },
        { url: '/v1/pets/%zz', headers: auth() },
      ];
      for (const request of requests) {
        const label = `${request.method ?? 'GET'} ${request.url}`;
        const safe = `req-${Math.random().toString(36).slice(2)}.a:b_c`;
        const echoed = await inject({ ...request, headers: { ...request.headers, 'x-request-id': safe } });
        assert.ok(echoed.statusCode >= 400, label);
        assert.equal(echoed.headers['x-request-id'], safe, label);
        for (const unsafe of ['has spaces in it', 'x'.repeat(200), '<script>', 'a\u00e9b']) {
          const replaced = await inject({
            ...request,
            headers: { ...request.headers, 'x-request-id': unsafe },
          });
          const id = String(replaced.headers['x-request-id']);
          assert.notEqual(id, unsafe, label);
          assert.match(id, /^[\w.:-]{1,128}$/, label);
        }
      }
      const a = await inject({ url: '/v1/pets' });
      const b = await inject({ url: '/v1/pets' });
      assert.notEqual(a.headers['x-request-id'], b.headers['x-request-id'], 'minted ids are unique');
    });

    test('validation errors carry details naming the offending field', async () => {
      const res = await inject({ url: '/v1/pets?limit=0', headers: auth() });
      assertV1Error(res, 400, 'validation_failed', 'limit=0');
      assert.ok(res.json().details.some((d: { field: string }) => d.field === 'limit'));
    });

    test('every code of the catalogue is documented in the OpenAPI description', async () => {
      const description: string = (await inject({ url: '/v1/openapi.json' })).json().info.description;
      for (const code of Object.keys(errorCatalogue))
        assert.ok(description.includes(`\`${code}\``), `${code} documented`);
    });
  });

  describe(`internal faults [${backend.name}]`, () => {
    let faulty: FaultyApp;
    before(async () => {
      faulty = await faultyApp(backend);
    });
    after(() => faulty.close());

    const secret = 'SECRET-INTERNALS /var/lib/db password=hunter2';

    function assertNoLeak(res: LightMyRequestResponse, label: string): void {
      for (const needle of ['SECRET', 'hunter2', '/var/lib', 'stack', 'Error:', ' at ', 'sqlite', 'SQLITE']) {
        assert.ok(!res.body.includes(needle), `${label}: body leaks ${JSON.stringify(needle)}: ${res.body}`);
      }
    }

    test('a plain Error from storage in a handler → 500 internal_error without internals', async () => {
      for (const [target, method, fault, request] of [
        [petRepository, 'list', () => Promise.reject(new Error(secret)), { url: '/v1/pets' }],
        [petRepository, 'get', () => Promise.reject(new TypeError(secret)), { url: '/v1/pets/1' }],
        [categoryRepository, 'list', () => Promise.reject(new RangeError(secret)), { url: '/v1/categories' }],
        [
          petRepository,
          'create',
          () => {
            throw new Error(secret); // synchronous throw, not a rejection
          },
          { method: 'POST', url: '/v1/pets', payload: { name: 'Rex', categoryId: 1 } },
        ],
      ] as [Fault[0], string, Fault[2], InjectOptions][]) {
        faulty.setFaults([[target, method, fault]]);
        const res = await faulty.app.inject({
          ...request,
          headers: { ...bearer(faulty.key), 'x-request-id': 'fault-1' },
        });
        assertV1Error(res, 500, 'internal_error', method);
        assert.equal(res.json().message, httpErrors.internal_error.message, method);
        assert.equal(
          res.headers['x-request-id'],
          'fault-1',
          `${method}: the request id ties the 500 to the logs`,
        );
        assertNoLeak(res, method);
      }
    });

    test('StorageUnavailableError in a handler → 503 service_unavailable with Retry-After', async () => {
      for (const [target, method, request] of [
        [petRepository, 'list', { url: '/v1/pets' }],
        [petRepository, 'get', { url: '/v1/pets/1' }],
        [
          petRepository,
          'create',
          { method: 'POST', url: '/v1/pets', payload: { name: 'Rex', categoryId: 1 } },
        ],
        [categoryRepository, 'list', { url: '/v1/categories' }],
      ] as [Fault[0], string, InjectOptions][]) {
        faulty.setFaults([
          [target, method, () => Promise.reject(new StorageUnavailableError(new Error(secret)))],
        ]);
        const res = await faulty.app.inject({ ...request, headers: bearer(faulty.key) });
        assertV1Error(res, 503, 'service_unavailable', method);
        assert.match(String(res.headers['retry-after']), /^[1-9]\d*$/, `${method}: Retry-After`);
        assertNoLeak(res, method);
      }
    });

    test('storage failing during authentication → 503 (unavailable) or 500 (fault), never a 401', async () => {
      faulty.setFaults([
        [
          accountRepository,
          'findKeyByHash',
          () => Promise.reject(new StorageUnavailableError(new Error(secret))),
        ],
      ]);
      let res = await faulty.app.inject({ url: '/v1/pets', headers: bearer(faulty.key) });
      assertErrorShape(res, 503, 'service_unavailable', 'auth unavailable');
      assert.match(String(res.headers['retry-after']), /^[1-9]\d*$/);
      assertNoLeak(res, 'auth unavailable');

      faulty.setFaults([[accountRepository, 'findKeyByHash', () => Promise.reject(new Error(secret))]]);
      res = await faulty.app.inject({ url: '/v1/pets', headers: bearer(faulty.key) });
      assertErrorShape(res, 500, 'internal_error', 'auth fault');
      assertNoLeak(res, 'auth fault');
    });

    test('storage failing during authentication still answers with the rate-limit headers', async () => {
      faulty.setFaults([
        [accountRepository, 'findKeyByHash', () => Promise.reject(new StorageUnavailableError())],
      ]);
      assertRateLimitHeaders(
        await faulty.app.inject({ url: '/v1/pets', headers: bearer(faulty.key) }),
        'auth unavailable',
      );
    });

    test('a write failing inside its transaction, after the real insert, leaves nothing behind; the service recovers', async () => {
      faulty.setFaults([]); // every repository method real: the fault is inside the transaction
      const before = await countPets(faulty.database);
      // With an Idempotency-Key the creation writes two rows (pet, idempotency record) in one transaction,
      // on every backend; the fault strikes after the pet row is in, so only a rollback can keep it out.
      const post = () =>
        faulty.app.inject({
          method: 'POST',
          url: '/v1/pets',
          headers: { ...bearer(faulty.key), 'idempotency-key': 'half-written' },
          payload: { name: 'Rex', categoryId: 1 },
        });
      let inserted = 0;
      const restore = failAfterPetInsert(faulty.database, () => {
        inserted++;
        return new StorageUnavailableError(new Error(secret));
      });
      let failed: LightMyRequestResponse;
      try {
        failed = await post();
      } finally {
        restore();
      }
      assert.equal(inserted, 1, 'the fault struck after a real insert');
      assertV1Error(failed, 503, 'service_unavailable', 'failed write');
      assertNoLeak(failed, 'failed write');
      assert.equal(await countPets(faulty.database), before, 'the inserted pet was rolled back');
      // Nor was the idempotency record kept: the same key now creates, it does not replay.
      const ok = await post();
      assert.equal(ok.statusCode, 201, ok.body);
      assert.equal(ok.headers['idempotent-replayed'], undefined);
      assert.equal(await countPets(faulty.database), before + 1);
    });

    test('/readyz reports unavailable storage with 503 and recovers', async () => {
      faulty.setFaults([['database', 'ping', () => Promise.reject(new StorageUnavailableError())]]);
      const down = await faulty.app.inject({ url: '/readyz' });
      assert.equal(down.statusCode, 503);
      assert.equal(down.json().storage, 'unavailable');
      faulty.setFaults([]);
      assert.equal((await faulty.app.inject({ url: '/readyz' })).statusCode, 200);
    });
  });
}
