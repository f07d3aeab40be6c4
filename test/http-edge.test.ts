/**
 * The HTTP edge, over real sockets: what Node's parser and server would answer by themselves (malformed
 * request lines, HTTP/0.9, CONNECT, header overflow, a missing Host, slow headers and bodies) is answered in
 * the Error shape with an X-Request-Id, nosniff and `application/json`, promptly, and the connection closes.
 * The timeouts are configured small here so that the slow-client cases run fast.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { backends, bearer, createTestContext, type TestContext } from './helpers.js';
import { parseRaw, rawExchange, type RawAnswer } from './support/raw-http.js';

const HEADERS_TIMEOUT_MS = 300;
const REQUEST_TIMEOUT_MS = 600;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The contract for every answer given at the edge. */
function assertEdgeError(answer: RawAnswer, status: number, code: string, label: string): void {
  const detail = `${label}: ${JSON.stringify(answer.raw.slice(0, 600))} ${answer.error ?? ''}`;
  assert.ok(answer.closedByServer, `${label}: the server closes the connection (${detail})`);
  assert.equal(answer.status, status, detail);
  assert.match(answer.headers['x-request-id'] ?? '', UUID, `${label}: X-Request-Id`);
  assert.equal(answer.headers['x-content-type-options'], 'nosniff', `${label}: nosniff`);
  assert.match(answer.headers['content-type'] ?? '', /^application\/json\b/, `${label}: content-type`);
  assert.equal(answer.headers.connection?.toLowerCase(), 'close', `${label}: Connection: close`);
  const body = JSON.parse(answer.body) as { code: string; message: string; status: number };
  assert.deepEqual(Object.keys(body).sort(), ['code', 'message', 'status'], detail);
  assert.equal(body.code, code, detail);
  assert.equal(body.status, status, detail);
  assert.ok(body.message.length > 0);
}

for (const backend of await backends()) {
  describe(`HTTP edge over raw sockets [${backend.name}]`, () => {
    let ctx: TestContext;
    let port: number;
    let key: string;

    before(async () => {
      ctx = await createTestContext(backend, {
        config: {
          headersTimeoutMs: HEADERS_TIMEOUT_MS,
          requestTimeoutMs: REQUEST_TIMEOUT_MS,
          unauthenticatedPerMinute: 1_000_000,
        },
      });
      await ctx.app.listen({ port: 0, host: '127.0.0.1' });
      port = (ctx.app.server.address() as AddressInfo).port;
      key = (await ctx.createKey({ perMinute: 1_000_000 })).key;
    });

    after(async () => {
      await ctx.close();
    });

    const cases: [string, string, number, string][] = [
      ['malformed request line', 'GARBAGE\r\n\r\n', 400, 'bad_request'],
      ['bad method token', 'G@T /v1/pets HTTP/1.1\r\nHost: x\r\n\r\n', 400, 'bad_request'],
      ['HTTP/0.9 request line, then nothing', 'GET /\r\n', 400, 'bad_request'],
      ['HTTP/0.9 request line with a blank line', 'GET /v1/pets\r\n\r\n', 400, 'bad_request'],
      ['request line ended by a bare LF', 'GET /v1/pets\n', 400, 'bad_request'],
      ['unsupported version', 'GET /v1/pets HTTP/2.0\r\nHost: x\r\n\r\n', 400, 'bad_request'],
      ['CONNECT', 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', 400, 'bad_request'],
      ['HTTP/2 preface', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 400, 'bad_request'],
      [
        'header line without a colon',
        'GET /v1/pets HTTP/1.1\r\nHost: x\r\nnonsense\r\n\r\n',
        400,
        'bad_request',
      ],
      [
        'header overflow',
        `GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
        431,
        'headers_too_large',
      ],
      ['no Host on HTTP/1.1', 'GET /v1/pets HTTP/1.1\r\nAuthorization: Bearer x\r\n\r\n', 400, 'bad_request'],
    ];
    for (const [label, request, status, code] of cases) {
      test(`${label}: ${status} ${code} in the Error shape, at once, then the connection closes`, async () => {
        // Well under the header timeout: the answer must not be the timeout's.
        const answer = await rawExchange(port, request, { withinMs: HEADERS_TIMEOUT_MS * 10 });
        assertEdgeError(answer, status, code, label);
      });
    }

    test('a missing Host is answered by the service itself: rate-limit headers are there too', async () => {
      const answer = await rawExchange(port, 'GET /v1/pets HTTP/1.1\r\n\r\n');
      assertEdgeError(answer, 400, 'bad_request', 'no Host');
      assert.match(answer.headers['x-ratelimit-limit'] ?? '', /^\d+$/);
      assert.match(answer.headers['x-ratelimit-remaining'] ?? '', /^\d+$/);
    });

    test('HTTP/1.0 without Host is still served (Host is an HTTP/1.1 requirement)', async () => {
      const answer = await rawExchange(port, 'GET /healthz HTTP/1.0\r\n\r\n');
      assert.equal(answer.status, 200, answer.raw);
    });

    test('an HTTP/0.9 line after a kept-alive answer is refused at once too', async () => {
      const answer = await rawExchange(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n', {
        trickle: { pieces: ['GET /\r\n'], gapMs: 50 },
      });
      const second = answer.raw.indexOf('HTTP/1.1 400');
      assert.ok(answer.raw.startsWith('HTTP/1.1 200'), answer.raw);
      assert.ok(second > 0, answer.raw);
      assertEdgeError({ ...answer, ...parseRaw(answer.raw.slice(second)) }, 400, 'bad_request', 'second');
    });

    test('garbage pipelined behind a valid request: the valid one is answered first, then the 400', async () => {
      // One write: the parser meets the garbage while the first request is still being served.
      const answer = await rawExchange(
        port,
        `GET /v1/pets?limit=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\nX{garbage\r\n\r\n`,
      );
      assert.ok(answer.raw.startsWith('HTTP/1.1 200'), answer.raw);
      const second = answer.raw.indexOf('HTTP/1.1 400');
      assert.ok(second > 0, `the garbage is answered after the valid request: ${answer.raw}`);
      assertEdgeError({ ...answer, ...parseRaw(answer.raw.slice(second)) }, 400, 'bad_request', 'second');
    });

    test('headers trickled slower than HEADERS_TIMEOUT_MS: 408 request_timeout', async () => {
      const pieces = Array.from({ length: 40 }, (_, i) => `X-Slow-${i}: ${i}\r\n`);
      const answer = await rawExchange(port, 'GET /v1/pets HTTP/1.1\r\nHost: x\r\n', {
        trickle: { pieces, gapMs: HEADERS_TIMEOUT_MS / 3 },
      });
      assertEdgeError(answer, 408, 'request_timeout', 'slow headers');
    });

    test('a connection that sends nothing is closed with 408 after HEADERS_TIMEOUT_MS', async () => {
      const answer = await rawExchange(port, '');
      assertEdgeError(answer, 408, 'request_timeout', 'silent');
    });

    test('a body trickled slower than REQUEST_TIMEOUT_MS: 408, and nothing is created', async () => {
      const before = (await ctx.app.inject({ url: '/v1/pets?limit=100', headers: bearer(key) })).json();
      const body = JSON.stringify({ name: 'Trickled', categoryId: 1 });
      const head =
        `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
      const answer = await rawExchange(port, head, {
        trickle: { pieces: [...body], gapMs: REQUEST_TIMEOUT_MS / 4 },
      });
      assertEdgeError(answer, 408, 'request_timeout', 'slow body');
      const afterwards = (await ctx.app.inject({ url: '/v1/pets?limit=100', headers: bearer(key) })).json();
      assert.deepEqual(afterwards, before);
    });

    test('randomized malformed request heads: never a 5xx, never closed unanswered, always the Error shape', async () => {
      const token = fc.stringMatching(/^[A-Za-z@ /:.\-\t]{0,12}$/);
      const head = fc.oneof(
        // A request line of random parts, some versioned, some not.
        fc
          .tuple(
            fc.constantFrom('GET', 'POST', 'CONNECT', 'G ET', '', 'get', 'PRI', 'OPTIONS'),
            fc.constantFrom('/v1/pets', '*', 'http://x/v1/pets', '', '/v1/../..', 'x:443', '/%zz'),
            fc.constantFrom(
              ' HTTP/1.1',
              ' HTTP/1.0',
              '',
              ' HTTP/0.9',
              ' HTTP/9.9',
              ' HTTX/1.1',
              ' HTTP/1.1 x',
            ),
            fc.array(fc.tuple(token, token), { maxLength: 4 }),
            fc.constantFrom('\r\n', '\n', '\r'),
          )
          .map(([method, target, version, headers, eol]) => {
            const lines = headers.map(([name, value]) => `${name}: ${value}`);
            return `${method} ${target}${version}${eol}${lines.join(eol)}${eol}${eol}`;
          }),
        // Random bytes after a valid start.
        fc
          .uint8Array({ minLength: 1, maxLength: 64 })
          .map((bytes) => `GET /v1/pets HTTP/1.1\r\n${Buffer.from(bytes).toString('latin1')}\r\n\r\n`),
      );
      await fc.assert(
        fc.asyncProperty(head, async (request) => {
          const answer = await rawExchange(port, request, { withinMs: REQUEST_TIMEOUT_MS * 10 });
          const label = JSON.stringify(request);
          assert.ok(answer.status !== undefined, `${label}: unanswered (${answer.error ?? 'closed'})`);
          assert.ok(answer.status < 500, `${label}: ${answer.raw}`);
          assert.match(answer.headers['x-request-id'] ?? '', /^[\w.:-]{1,128}$/, `${label}: X-Request-Id`);
          if (answer.status >= 400) {
            assert.match(answer.headers['content-type'] ?? '', /^application\/json\b/, label);
            const body = JSON.parse(answer.body) as { code: string; status: number };
            assert.equal(body.status, answer.status, label);
            assert.match(body.code, /^[a-z_]+$/, label);
          }
        }),
        { seed: 20_261_123, numRuns: Number(process.env.FUZZ_RUNS ?? 150) },
      );
    });
  });
}
