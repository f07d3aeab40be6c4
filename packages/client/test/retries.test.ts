/**
 * The client's retry rules with a scripted fetch (no server): which answers are retried, how long it
 * waits, and that a write keeps one Idempotency-Key across its tries. The same rules against the real
 * server are in test/client.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  PetAdoptionClient,
  PetAdoptionConnectionError,
  PetAdoptionError,
  RateLimitError,
  type PetAdoptionClientOptions,
} from '../src/index.js';

type Scripted = Response | Error;

const NOW = Date.UTC(2030, 0, 1, 12, 0, 0);

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(status === 204 ? null : JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json', 'x-request-id': `req-${status}`, ...headers },
  });
}

function error(status: number, code: string, headers: Record<string, string> = {}): Response {
  return json(status, { code, message: code, status }, headers);
}

const PET = { id: 1, name: 'Rex', categoryId: 1, status: 'available' };

function scripted(answers: Scripted[], options: Partial<PetAdoptionClientOptions> = {}) {
  const requests: { url: string; init: RequestInit }[] = [];
  const sleeps: number[] = [];
  let now = NOW;
  const client = new PetAdoptionClient({
    apiKey: 'pas_test',
    baseUrl: 'https://api.example.com',
    now: () => now,
    sleep: async (ms) => {
      sleeps.push(ms);
      now += ms;
    },
    random: () => 0.999,
    fetch: async (input, init) => {
      requests.push({ url: String(input), init: init ?? {} });
      const next = answers.shift();
      if (next === undefined) throw new Error('no more scripted answers');
      if (next instanceof Error) throw next;
      return next;
    },
    ...options,
  });
  const header = (i: number, name: string) => new Headers(requests[i]!.init.headers).get(name);
  return { client, requests, sleeps, header };
}

test('408, 500, 502, 503, 504 and connection errors are retried with full-jitter exponential backoff', async () => {
  for (const first of [408, 500, 502, 503, 504]) {
    const { client, sleeps, requests } = scripted([error(first, 'x'), error(first, 'x'), json(201, PET)]);
    assert.deepEqual(await client.pets.create({ name: 'Rex', categoryId: 1 }), PET);
    assert.equal(requests.length, 3);
    assert.deepEqual(sleeps, [499, 999], `${first}: random × 500 ms × 2^attempt`);
  }
  const { client, sleeps } = scripted([new TypeError('fetch failed'), json(200, [PET])]);
  for await (const pet of client.pets.list()) assert.equal(pet.id, 1);
  assert.equal(sleeps.length, 1);
});

test('the default of 2 retries: the third failure is thrown, as the error or a PetAdoptionConnectionError', async () => {
  const failing = scripted([
    error(503, 'service_unavailable'),
    error(503, 'x'),
    error(503, 'service_unavailable'),
  ]);
  await assert.rejects(
    failing.client.store.inventory(),
    (e: PetAdoptionError) => e.code === 'service_unavailable',
  );
  assert.equal(failing.requests.length, 3);
  const unreachable = scripted([new TypeError('a'), new TypeError('b'), new TypeError('c')]);
  await assert.rejects(unreachable.client.store.inventory(), PetAdoptionConnectionError);
  const none = scripted([error(500, 'internal_error')], { maxRetries: 0 });
  await assert.rejects(none.client.store.inventory(), (e: PetAdoptionError) => e.status === 500);
  assert.equal(none.requests.length, 1);
});

test('409, 412 and 422 are never retried; idempotency_in_progress is, with the same key', async () => {
  for (const [status, code] of [
    [409, 'pet_not_available'],
    [412, 'precondition_failed'],
    [422, 'idempotency_key_reused'],
    [400, 'validation_failed'],
  ] as const) {
    const { client, requests } = scripted([error(status, code), json(201, PET)]);
    await assert.rejects(client.pets.create({ name: 'Rex', categoryId: 1 }), (e: PetAdoptionError) => {
      assert.equal(e.code, code);
      assert.equal(e.status, status);
      assert.equal(e.requestId, `req-${status}`);
      return true;
    });
    assert.equal(requests.length, 1, `${code} is not retried`);
  }
  const { client, requests, header } = scripted([error(409, 'idempotency_in_progress'), json(201, PET)]);
  assert.deepEqual(await client.pets.create({ name: 'Rex', categoryId: 1 }), PET);
  assert.equal(requests.length, 2);
  assert.match(header(0, 'idempotency-key') ?? '', /^[0-9a-f]{32}$/);
  assert.equal(header(1, 'idempotency-key'), header(0, 'idempotency-key'));
});

test('every POST, PATCH and DELETE gets its own key; GET none; a given key is used as is', async () => {
  const { client, header } = scripted([
    json(201, PET),
    json(201, PET),
    json(200, PET, { etag: '"2"' }),
    json(204, null),
    json(200, [PET]),
    json(201, PET),
  ]);
  await client.pets.create({ name: 'Rex', categoryId: 1 });
  await client.pets.create({ name: 'Rex', categoryId: 1 });
  await client.pets.update(1, { name: 'Max' });
  await client.pets.delete(1);
  for await (const pet of client.pets.list()) void pet;
  await client.pets.create({ name: 'Rex', categoryId: 1 }, { idempotencyKey: 'mine' });
  const keys = [0, 1, 2, 3, 4, 5].map((i) => header(i, 'idempotency-key'));
  assert.equal(new Set(keys.slice(0, 4)).size, 4);
  assert.equal(keys[4], null);
  assert.equal(keys[5], 'mine');
  assert.equal(header(2, 'content-type'), 'application/merge-patch+json');
  assert.equal(header(3, 'if-match'), '"2"', 'the ETag of the update answer');
});

test('Retry-After as seconds or as an HTTP date is waited out; beyond maxRetryAfterMs it throws at once', async () => {
  const seconds = scripted([
    error(429, 'rate_limited', { 'retry-after': '7' }),
    json(200, { available: 1, pending: 0, sold: 0 }),
  ]);
  await seconds.client.store.inventory();
  assert.deepEqual(seconds.sleeps, [7_000]);
  const date = new Date(NOW + 42_000).toUTCString();
  const dated = scripted([error(503, 'service_unavailable', { 'retry-after': date }), json(200, {})]);
  await dated.client.store.inventory();
  assert.deepEqual(dated.sleeps, [42_000]);

  const long = scripted([error(429, 'rate_limited', { 'retry-after': '61' })]);
  await assert.rejects(long.client.store.inventory(), (e: RateLimitError) => {
    assert.ok(e instanceof RateLimitError);
    assert.equal(e.retryAfterMs, 61_000);
    return true;
  });
  assert.deepEqual(long.sleeps, []);
  const raised = scripted([error(429, 'rate_limited', { 'retry-after': '61' }), json(200, {})], {
    maxRetryAfterMs: 120_000,
  });
  await raised.client.store.inventory();
  assert.deepEqual(raised.sleeps, [61_000]);
});

test('baseUrl: the root or the /v1 address, with or without a slash, and next links relative or absolute', async () => {
  for (const baseUrl of [
    'https://api.example.com',
    'https://api.example.com/',
    'https://api.example.com/v1',
    'https://api.example.com/v1/',
  ]) {
    const { client, requests } = scripted(
      [
        json(200, [PET], { link: '</v1/pets?limit=100&cursor=abc>; rel="next"' }),
        json(200, [{ ...PET, id: 2 }], {
          link: '<https://api.example.com/v1/pets?limit=100&cursor=def>; rel="next"',
        }),
        json(200, []),
      ],
      { baseUrl },
    );
    const ids = [];
    for await (const pet of client.pets.list()) ids.push(pet.id);
    assert.deepEqual(ids, [1, 2]);
    assert.deepEqual(
      requests.map((r) => r.url),
      [
        'https://api.example.com/v1/pets?limit=100',
        'https://api.example.com/v1/pets?limit=100&cursor=abc',
        'https://api.example.com/v1/pets?limit=100&cursor=def',
      ],
    );
  }
});

test('an answer that is not the Error shape still gets a catalogue code', async () => {
  const { client } = scripted([new Response('<html>Bad gateway</html>', { status: 502 })], { maxRetries: 0 });
  await assert.rejects(client.store.inventory(), (e: PetAdoptionError) => e.code === 'service_unavailable');
});
