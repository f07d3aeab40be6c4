/**
 * The client SDK (`@pet-adoption/client`, as built: what a user imports) against the real server on a real
 * socket, through a TCP proxy that can lose an answer on the way. The server's clock and the client's time
 * source are one fake clock, so waiting out a minute window costs no real time; each test says how many
 * requests reached the server and what the client waited.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import {
  PetAdoptionClient,
  PetAdoptionError,
  RateLimitError,
  type DeprecationNotice,
  type PetAdoptionClientOptions,
} from '@pet-adoption/client';
import { backends, createTestContext, TestClock, type TestContext } from './helpers.js';
import { TcpProxy } from '../support/tcp-proxy.js';

interface Harness {
  client: PetAdoptionClient;
  /** Every wait the client asked for, in ms. */
  sleeps: number[];
  /** Every request the client sent: status answered (0: no answer) and its Idempotency-Key. */
  sent: { method: string; url: string; status: number; code?: string; idempotencyKey: string | null }[];
}

for (const backend of await backends()) {
  describe(`client SDK over a socket [${backend.name}]`, () => {
    let ctx: TestContext;
    let proxy: TcpProxy;
    let origin: string;
    const clock = new TestClock();

    before(async () => {
      ctx = await createTestContext(backend, { clock });
      await ctx.app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = ctx.app.server.address() as AddressInfo;
      proxy = await new TcpProxy({ host: '127.0.0.1', port }, 'api').start();
      origin = `http://127.0.0.1:${proxy.port}`;
    });
    after(async () => {
      proxy.close();
      await ctx.close();
    });

    /** A client whose waits move the fake clock the server reads too. */
    function harness(apiKey: string, options: Partial<PetAdoptionClientOptions> = {}): Harness {
      const sleeps: number[] = [];
      const sent: Harness['sent'] = [];
      const client = new PetAdoptionClient({
        apiKey,
        baseUrl: origin,
        now: () => clock.now,
        sleep: async (ms) => {
          sleeps.push(ms);
          clock.advance(ms);
        },
        random: () => 0.5,
        fetch: async (input, init) => {
          const entry = {
            method: init?.method ?? 'GET',
            url: String(input),
            status: 0,
            idempotencyKey: new Headers(init?.headers).get('idempotency-key'),
          } as Harness['sent'][number];
          sent.push(entry);
          const response = await fetch(input, init);
          entry.status = response.status;
          if (!response.ok)
            entry.code = (
              await response
                .clone()
                .json()
                .catch(() => ({}))
            )?.code;
          return response;
        },
        ...options,
      });
      return { client, sleeps, sent };
    }

    async function enterpriseKey(perMinute: number, perDay: number, name?: string): Promise<string> {
      return (await ctx.createKey({ name, plan: 'enterprise', perMinute, perDay })).key;
    }

    test('a client sending 3× its per-minute quota finishes every call, unbanned, in fake time only', async () => {
      const started = performance.now();
      const fakeStart = clock.now;
      const key = await enterpriseKey(5, 10_000);
      const { client, sleeps, sent } = harness(key);
      // Three callers at once, five creates each: 15 requests against a quota of 5 a minute.
      const created = await Promise.all(
        [0, 1, 2].map(async (worker) => {
          const pets = [];
          for (let i = 0; i < 5; i++)
            pets.push(await client.pets.create({ name: `Quota ${worker}-${i}`, categoryId: 1 }));
          return pets;
        }),
      );
      assert.equal(created.flat().length, 15);
      assert.equal(new Set(created.flat().map((p) => p.id)).size, 15);
      assert.ok(
        !sent.some((s) => s.code === 'temporarily_banned'),
        JSON.stringify(sent.map((s) => s.status)),
      );
      const refused = sent.filter((s) => s.status === 429).length;
      assert.ok(refused <= 5, `at most the quota refused in a minute (ban threshold): ${refused}`);
      assert.ok(sleeps.length > 0, 'it waited for the windows to reset');
      assert.ok(clock.now - fakeStart >= 120_000, 'three windows of fake time passed');
      assert.ok(performance.now() - started < 10_000, 'but no real minutes');
      // Still in good standing: the next call goes through.
      assert.equal((await client.store.inventory()).available >= 15, true);
    });

    test('a 429 (quota spent by another client of the account) is waited out for Retry-After, then succeeds', async () => {
      clock.set(clock.now - (clock.now % 60_000) + 90_000); // mid-minute: Retry-After is 30 s
      const name = `shared-${clock.now}`;
      const other = harness(await enterpriseKey(3, 10_000, name));
      const { key } = await ctx.createKey({ name, plan: 'enterprise', perMinute: 3, perDay: 10_000 });
      for (let i = 0; i < 3; i++) await other.client.store.inventory({});
      const { client, sleeps, sent } = harness(key);
      const pets = [];
      for await (const pet of client.pets.list({ limit: 1 })) {
        pets.push(pet);
        break;
      }
      assert.equal(pets.length, 1);
      assert.deepEqual(
        sent.map((s) => s.status),
        [429, 200],
      );
      assert.deepEqual(sleeps, [30_000]);
    });

    test('a create whose answer is lost is retried with the same Idempotency-Key and creates one pet', async () => {
      const { client, sent } = harness((await ctx.createKey()).key);
      const name = `Lost answer ${clock.now}`;
      const lost = proxy.loseNextResponse();
      const pet = await client.pets.create({ name, categoryId: 2 });
      await lost;
      assert.equal(pet.name, name);
      assert.equal(sent.length, 2, 'the first try and one retry');
      assert.equal(sent[0]!.status, 0, 'the first answer never arrived');
      assert.equal(sent[1]!.status, 201);
      assert.ok(sent[0]!.idempotencyKey);
      assert.equal(sent[1]!.idempotencyKey, sent[0]!.idempotencyKey);
      const named = [];
      for await (const p of client.pets.list()) if (p.name === name) named.push(p);
      assert.deepEqual(named, [pet], 'exactly one pet was created');
    });

    test('iterating 250 pets yields each exactly once, at either base URL, by items and by pages', async () => {
      const seeded: number[] = [];
      for (let i = 0; i < 250; i++) {
        const result = await ctx.pets.create({ name: `Paged ${i}`, categoryId: 3, status: 'sold' });
        assert.equal(result.kind, 'created');
        if (result.kind === 'created') seeded.push(result.pet.id);
      }
      const key = (await ctx.createKey()).key;
      for (const baseUrl of [origin, `${origin}/v1`, `${origin}/v1/`]) {
        const { client } = harness(key, { baseUrl });
        const ids: number[] = [];
        for await (const pet of client.pets.list({ status: 'sold' })) ids.push(pet.id);
        assert.deepEqual(ids, seeded, baseUrl);
      }
      const { client, sent } = harness(key);
      const pages = [];
      for await (const page of client.pets.list({ status: 'sold', limit: 7 }).pages()) pages.push(page);
      assert.equal(pages.length, 36);
      assert.deepEqual(
        pages.flatMap((p) => p.items.map((pet) => pet.id)),
        seeded,
      );
      assert.equal(pages.at(-1)!.nextUrl, undefined);
      assert.match(pages[0]!.cursor ?? '', /\S/);
      assert.equal(sent.length, 36);
    });

    test('a day window spent throws RateLimitError at once, and later calls are not even sent', async () => {
      const { client, sleeps, sent } = harness(await enterpriseKey(100, 3));
      for (let i = 0; i < 3; i++) await client.store.inventory();
      const error = await client.store.inventory().then(
        () => assert.fail('the fourth call of the day must fail'),
        (e: unknown) => e,
      );
      assert.ok(error instanceof RateLimitError, String(error));
      assert.ok(error instanceof PetAdoptionError);
      assert.equal(error.code, 'rate_limited');
      assert.equal(error.status, 429);
      assert.ok(error.retryAfterMs > 60_000, `${error.retryAfterMs}`);
      assert.match(error.requestId ?? '', /\S/);
      assert.equal(error.rateLimit?.windows.find((w) => w.name === 'day')?.remaining, 0);
      assert.deepEqual(sleeps, [], 'no waiting');
      assert.equal(sent.length, 4);
      await assert.rejects(client.pets.create({ name: 'Later', categoryId: 1 }), RateLimitError);
      assert.equal(sent.length, 4, 'not sent: it would only bring a ban nearer');
    });

    test('a ban throws RateLimitError (temporarily_banned) at once', async () => {
      const name = `banned-${clock.now}`;
      const hammer = harness(await enterpriseKey(2, 10_000, name));
      const refused = [];
      for (let i = 0; i < 6; i++) {
        // A client with no retries, a new one each time, so the SDK's own protection does not stop the hammering.
        const fresh = harness(
          (await ctx.createKey({ name, plan: 'enterprise', perMinute: 2, perDay: 10_000 })).key,
          {
            maxRetries: 0,
          },
        );
        refused.push(await fresh.client.store.inventory().catch((e: RateLimitError) => e.code));
      }
      assert.ok(refused.includes('temporarily_banned'), JSON.stringify(refused));
      const { client, sleeps } = hammer;
      const error = await client.store.inventory().catch((e: unknown) => e);
      assert.ok(error instanceof RateLimitError, String(error));
      assert.equal(error.code, 'temporarily_banned');
      assert.ok(error.retryAfterMs > 60_000);
      assert.deepEqual(sleeps, []);
    });

    test('errors carry the catalogue code, status, request id and quota; 409, 412 and 422 are not retried', async () => {
      const { client, sent } = harness((await ctx.createKey()).key, { onDeprecation: () => {} });
      const expectError = async (promise: Promise<unknown>, code: string, status: number) => {
        const before = sent.length;
        const error = await promise.then(
          () => assert.fail(`expected ${code}`),
          (e: unknown) => e,
        );
        assert.ok(error instanceof PetAdoptionError, String(error));
        assert.ok(!(error instanceof RateLimitError));
        assert.equal(error.code, code);
        assert.equal(error.status, status);
        assert.match(error.requestId ?? '', /\S/);
        assert.ok(error.rateLimit && error.rateLimit.limit > 0);
        assert.equal(sent.length - before, 1, `${code}: sent once`);
        return error;
      };
      await expectError(client.pets.get(987_654_321), 'pet_not_found', 404);
      const invalid = await expectError(
        client.pets.create({ name: '', categoryId: 1 }),
        'validation_failed',
        400,
      );
      assert.ok(invalid.details && invalid.details.length > 0);

      const pet = await client.pets.create({ name: 'Versioned', categoryId: 1 });
      const someoneElse = harness((await ctx.createKey()).key).client;
      await someoneElse.pets.update(pet.id, { name: 'Changed elsewhere' }, { ifMatch: false });
      const stale = await expectError(
        client.pets.update(pet.id, { name: 'Mine' }),
        'precondition_failed',
        412,
      );
      assert.equal(stale.headers?.get('etag'), '"2"');
      const fresh = await client.pets.get(pet.id);
      assert.equal(client.etagOf(`/pets/${pet.id}`), '"2"');
      assert.equal((await client.pets.update(pet.id, { name: 'Mine' })).name, 'Mine', 'If-Match from memory');
      assert.equal(fresh.name, 'Changed elsewhere');

      await client.orders.place({ petId: pet.id });
      await expectError(client.orders.place({ petId: pet.id }), 'pet_not_available', 409);
      await client.pets.create({ name: 'Keyed', categoryId: 1 }, { idempotencyKey: 'sdk-key' });
      await expectError(
        client.pets.create({ name: 'Other body', categoryId: 1 }, { idempotencyKey: 'sdk-key' }),
        'idempotency_key_reused',
        422,
      );
    });

    test('a deprecated operation warns once, naming its sunset and successor', async (t) => {
      const notices: DeprecationNotice[] = [];
      const { client } = harness((await ctx.createKey()).key, { onDeprecation: (n) => notices.push(n) });
      const pet = await client.pets.create({ name: 'Old API', categoryId: 1 });
      for (let i = 0; i < 3; i++) await client.pets.get(pet.id);
      await client.pets.update(pet.id, { name: 'Still old' });
      assert.equal(notices.length, 1);
      assert.equal(notices[0]!.operation, 'GET /v1/pets/{petId}');
      assert.equal(notices[0]!.sunset?.toISOString(), '2030-12-05T00:00:00.000Z');
      assert.equal(notices[0]!.successor, '/v1/pets');

      const warn = t.mock.method(console, 'warn', () => {});
      const plain = harness((await ctx.createKey()).key, { onDeprecation: undefined }).client;
      await plain.pets.get(pet.id);
      await plain.pets.get(pet.id);
      assert.equal(warn.mock.callCount(), 1);
      assert.match(
        String(warn.mock.calls[0]!.arguments[0]),
        /GET \/v1\/pets\/\{petId\} is deprecated.*2030-12-05/,
      );
    });

    test('every operation: an adoption end to end, the feed, inventory and webhook endpoints', async () => {
      const { client } = harness((await ctx.createKey()).key);
      const categories = [];
      for await (const category of client.categories.list()) categories.push(category.name);
      assert.equal(categories.length, 7);
      const before = await client.store.inventory();
      const pet = await client.pets.create({ name: 'Adoptee', categoryId: 1 });
      const order = await client.orders.place({ petId: pet.id });
      assert.equal(order.status, 'placed');
      assert.equal((await client.orders.get(order.id)).petId, pet.id);
      assert.equal((await client.orders.approve(order.id)).status, 'approved');
      assert.equal((await client.orders.deliver(order.id)).status, 'delivered');
      const sold = [];
      for await (const p of client.pets.list({ status: 'sold' })) if (p.id === pet.id) sold.push(p);
      assert.equal(sold.length, 1);
      const after = await client.store.inventory();
      assert.equal(after.sold, before.sold + 1);

      const second = await client.pets.create({ name: 'Returned', categoryId: 2 });
      const cancelled = await client.orders.cancel((await client.orders.place({ petId: second.id })).id);
      assert.equal(cancelled.status, 'cancelled');
      const mine = [];
      for await (const o of client.orders.list({ petId: second.id })) mine.push(o.status);
      assert.deepEqual(mine, ['cancelled']);

      const types = [];
      for await (const event of client.events.list({ type: 'order.delivered' })) types.push(event.type);
      assert.ok(types.length >= 1 && types.every((type) => type === 'order.delivered'));
      const pages = [];
      for await (const page of client.events.list().pages()) pages.push(page);
      assert.equal(pages.at(-1)!.items.length, 0, 'the feed ends at an empty page');
      assert.match(pages.at(-1)!.cursor ?? '', /\S/, 'whose cursor resumes it');

      await client.pets.delete(second.id);
      await assert.rejects(client.pets.get(second.id), (e: PetAdoptionError) => e.code === 'pet_not_found');

      const endpoint = await client.webhookEndpoints.create({
        url: 'https://receiver.example/hook',
        events: ['*'],
      });
      assert.match(endpoint.secret, /^whsec_/);
      const listed = [];
      for await (const e of client.webhookEndpoints.list()) listed.push(e.id);
      assert.ok(listed.includes(endpoint.id));
      assert.equal((await client.webhookEndpoints.get(endpoint.id)).url, 'https://receiver.example/hook');
      assert.equal((await client.webhookEndpoints.update(endpoint.id, { enabled: false })).enabled, false);
      const rotated = await client.webhookEndpoints.rotateSecret(endpoint.id);
      assert.notEqual(rotated.secret, endpoint.secret);
      const deliveries = [];
      for await (const d of client.webhookEndpoints.listDeliveries(endpoint.id)) deliveries.push(d);
      await assert.rejects(
        client.webhookEndpoints.retryDelivery(endpoint.id, 987_654_321),
        (e: PetAdoptionError) => e.code === 'delivery_not_found',
      );
      await client.webhookEndpoints.delete(endpoint.id);
      await assert.rejects(
        client.webhookEndpoints.get(endpoint.id),
        (e: PetAdoptionError) => e.code === 'webhook_endpoint_not_found',
      );
    });
  });
}
