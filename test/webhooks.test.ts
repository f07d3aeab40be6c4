/**
 * Webhooks end to end on every backend: endpoints through the real HTTP layer, deliveries by the real
 * dispatcher to a real receiver on 127.0.0.1, signatures checked with the `standardwebhooks` package. Time
 * is the injected clock (started at the real time, so signatures are fresh), moved by hand for retries.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { WebhookDispatcher } from '../src/modules/webhooks/dispatcher.js';
import { webhookRepository } from '../src/modules/webhooks/repository.js';
import { backends, bearer, createTestContext, TestClock, type TestContext } from './helpers.js';
import { insertEvent, Receiver } from './support/webhooks.js';

const ALLOW = ['127.0.0.1'];

for (const backend of await backends()) {
  describe(`webhooks [${backend.name}]`, () => {
    let ctx: TestContext;
    let receiver: Receiver;
    let url: string;
    let key: string;
    const dispatchers: WebhookDispatcher[] = [];

    const dispatcher = (options: Partial<ConstructorParameters<typeof WebhookDispatcher>[0]> = {}) => {
      const d = new WebhookDispatcher({
        database: ctx.database,
        clock: ctx.clock.fn,
        allowHosts: ALLOW,
        pollMs: 20,
        random: () => 0.5,
        ...options,
      });
      dispatchers.push(d);
      return d;
    };
    const api = (method: string, path: string, payload?: object, k = key) =>
      ctx.app.inject({ method: method as 'GET', url: `/v1${path}`, headers: bearer(k), payload });
    const createEndpoint = async (body: object = { url, events: ['*'] }, k = key) => {
      const res = await api('POST', '/webhook-endpoints', body, k);
      assert.equal(res.statusCode, 201, res.body);
      return res.json<{ id: number; secret: string }>();
    };
    const deliveries = async (id: number) =>
      (await api('GET', `/webhook-endpoints/${id}/deliveries`)).json<
        {
          id: number;
          status: string;
          attempts: number;
          lastStatusCode: number | null;
          lastError: string | null;
          nextAttemptAt: string | null;
        }[]
      >();
    // Endpoints of earlier tests would receive this test's events too; each test starts from none.
    // Signature checks compare webhook-timestamp with the real time: tests that verify start at it.
    const clearEndpoints = async () => {
      ctx.clock.set(Date.now());
      for (const e of (await api('GET', '/webhook-endpoints?limit=100')).json<{ id: number }[]>()) {
        await api('DELETE', `/webhook-endpoints/${e.id}`);
      }
    };

    before(async () => {
      ctx = await createTestContext(backend, {
        config: { webhookAllowHosts: ALLOW },
        clock: new TestClock(Date.now()),
      });
      ({ key } = await ctx.createKey());
      receiver = new Receiver();
      url = await receiver.start();
    });
    after(async () => {
      await Promise.all(dispatchers.map((d) => d.stop()));
      await receiver.close();
      await ctx.close();
    });

    test('endpoints: create shows a whsec_ secret once; list, get, patch, delete; another account gets 404', async () => {
      await clearEndpoints();
      const created = await createEndpoint({ url, events: ['pet.created', 'pet.updated'] });
      assert.match(created.secret, /^whsec_[A-Za-z0-9+/]{32}$/);
      assert.equal(Buffer.from(created.secret.slice(6), 'base64').length, 24);
      const got = await api('GET', `/webhook-endpoints/${created.id}`);
      assert.equal(got.statusCode, 200);
      assert.equal(got.json().secret, undefined, 'the secret is shown only on creation');
      assert.deepEqual(got.json().events, ['pet.created', 'pet.updated']);
      const list = await api('GET', '/webhook-endpoints?limit=1');
      assert.equal(list.json().length, 1);

      const patched = await api('PATCH', `/webhook-endpoints/${created.id}`, {
        events: ['*'],
        enabled: false,
      });
      assert.equal(patched.statusCode, 200, patched.body);
      assert.deepEqual(patched.json().events, ['*']);
      assert.equal(patched.json().enabled, false);

      const { key: other } = await ctx.createKey();
      for (const [method, path] of [
        ['GET', `/webhook-endpoints/${created.id}`],
        ['PATCH', `/webhook-endpoints/${created.id}`],
        ['DELETE', `/webhook-endpoints/${created.id}`],
        ['POST', `/webhook-endpoints/${created.id}/rotate-secret`],
        ['GET', `/webhook-endpoints/${created.id}/deliveries`],
      ] as const) {
        const res = await api(method, path, method === 'PATCH' ? { enabled: true } : undefined, other);
        assert.equal(res.statusCode, 404, `${method} ${path}`);
        assert.equal(res.json().code, 'webhook_endpoint_not_found');
      }
      const missingDelivery = await api('POST', `/webhook-endpoints/${created.id}/deliveries/999999/retry`);
      assert.equal(missingDelivery.json().code, 'delivery_not_found');
      assert.equal((await api('DELETE', `/webhook-endpoints/${created.id}`)).statusCode, 204);
      assert.equal((await api('GET', `/webhook-endpoints/${created.id}`)).statusCode, 404);
    });

    test('URL rules: https, or http only for WEBHOOK_ALLOW_HOSTS; anything else is 400 on url', async () => {
      for (const bad of [
        'http://example.com/hook',
        'ftp://127.0.0.1/x',
        'not a url',
        'https://u:p@example.com/',
      ]) {
        const res = await api('POST', '/webhook-endpoints', { url: bad, events: ['*'] });
        assert.equal(res.statusCode, 400, bad);
        assert.equal(res.json().code, 'validation_failed');
        assert.equal(res.json().details[0].field, 'url');
      }
      const unknownType = await api('POST', '/webhook-endpoints', { url, events: ['pet.exploded'] });
      assert.equal(unknownType.statusCode, 400);
      const patch = await api('PATCH', '/webhook-endpoints/1', { url: 'http://example.com/' });
      assert.ok([400, 404].includes(patch.statusCode));
    });

    test('a delivery is signed per Standard Webhooks and verifies with the package; body is the event', async () => {
      await clearEndpoints();
      const { id, secret } = await createEndpoint();
      const event = await insertEvent(ctx.database, { type: 'pet.created', createdAt: ctx.clock.now });
      const before = receiver.requests.length;
      await dispatcher().runOnce();
      const [request] = (await receiver.waitFor(before + 1)).slice(before);
      assert.equal(request!.body, event.payload);
      assert.equal(request!.headers['webhook-id'], event.id);
      assert.equal(request!.headers['webhook-timestamp'], String(Math.floor(ctx.clock.now / 1000)));
      assert.match(request!.headers['webhook-signature']!, /^v1,[A-Za-z0-9+/=]+$/);
      new Webhook(secret).verify(request!.body, request!.headers);
      assert.throws(() =>
        new Webhook(`whsec_${Buffer.alloc(24).toString('base64')}`).verify(request!.body, request!.headers),
      );
      const [delivery] = await deliveries(id);
      assert.equal(delivery!.status, 'succeeded');
      assert.equal(delivery!.attempts, 1);
      assert.equal(delivery!.lastStatusCode, 200);
    });

    test('a real change (POST /v1/pets) reaches the receiver as its pet.created event', async () => {
      await clearEndpoints();
      const { secret } = await createEndpoint({ url, events: ['pet.created'] });
      const start = receiver.requests.length;
      const created = await api('POST', '/pets', { name: 'Hooked', categoryId: 1 });
      assert.equal(created.statusCode, 201);
      await dispatcher().runOnce();
      const request = (await receiver.waitFor(start + 1))[start]!;
      const event = new Webhook(secret).verify(request.body, request.headers) as {
        type: string;
        data: { object: unknown };
      };
      assert.equal(event.type, 'pet.created');
      assert.deepEqual(event.data.object, created.json());
    });

    test('a change committed while no endpoint is enabled goes to none created later', async () => {
      await clearEndpoints();
      const unwatched = await api('POST', '/pets', { name: 'Unwatched', categoryId: 1 });
      assert.equal(unwatched.statusCode, 201);
      const { id } = await createEndpoint({ url, events: ['pet.created'] });
      const watched = await api('POST', '/pets', { name: 'Watched', categoryId: 1 });
      assert.equal(watched.statusCode, 201);
      const start = receiver.requests.length;
      await dispatcher().runOnce();
      const request = (await receiver.waitFor(start + 1))[start]!;
      assert.deepEqual(
        (JSON.parse(request.body) as { data: { object: unknown } }).data.object,
        watched.json(),
      );
      const sent = await deliveries(id);
      assert.equal(sent.length, 1, JSON.stringify(sent));
    });

    test('order.* reach the order account and orders:manage endpoints only; pet.* reach all', async () => {
      await clearEndpoints();
      // What an endpoint receives is bounded by its keys' read scopes (webhooks.trust.test.ts).
      const reader = ['webhooks:write', 'orders:read', 'events:read'] as const;
      const owner = await ctx.createKey({ name: 'order-owner', scopes: reader });
      const stranger = await ctx.createKey({ name: 'stranger', scopes: reader });
      const manager = await ctx.createKey({
        name: 'manager',
        scopes: ['webhooks:write', 'orders:manage', 'events:read'],
      });
      const ownerHook = await createEndpoint({ url, events: ['*'] }, owner.key);
      const strangerHook = await createEndpoint({ url, events: ['*'] }, stranger.key);
      const managerHook = await createEndpoint({ url, events: ['*'] }, manager.key);
      const ownerAccount = (await ctx.accounts.findAccount('order-owner'))!;
      await insertEvent(ctx.database, { type: 'order.placed', accountId: ownerAccount.id });
      await insertEvent(ctx.database, { type: 'pet.updated' });
      await dispatcher().runOnce();
      const types = async (id: number, k: string) =>
        (await api('GET', `/webhook-endpoints/${id}/deliveries`, undefined, k))
          .json<{ eventType: string }[]>()
          .map((d) => d.eventType)
          .sort();
      assert.deepEqual(await types(ownerHook.id, owner.key), ['order.placed', 'pet.updated']);
      assert.deepEqual(await types(strangerHook.id, stranger.key), ['pet.updated']);
      assert.deepEqual(await types(managerHook.id, manager.key), ['order.placed', 'pet.updated']);
      for (const k of [owner.key, stranger.key, manager.key]) {
        for (const e of (await api('GET', '/webhook-endpoints', undefined, k)).json<{ id: number }[]>()) {
          await api('DELETE', `/webhook-endpoints/${e.id}`, undefined, k);
        }
      }
    });

    test('a 500 is retried on schedule; Retry-After later than the schedule is honoured', async () => {
      await clearEndpoints();
      const { id } = await createEndpoint();
      await insertEvent(ctx.database, { type: 'pet.updated' });
      const start = receiver.requests.length;
      receiver.answers.push({ status: 500 }, { status: 503, headers: { 'retry-after': '600' } });
      const d = dispatcher();
      await d.runOnce();
      let [delivery] = await deliveries(id);
      assert.equal(delivery!.status, 'pending');
      assert.equal(delivery!.lastStatusCode, 500);
      // First retry after 5 s (jitter pinned to the middle).
      assert.equal(Date.parse(delivery!.nextAttemptAt!), ctx.clock.now + 5000);
      ctx.clock.advance(4_000);
      await d.runOnce();
      assert.equal(receiver.requests.length, start + 1, 'not due yet');
      ctx.clock.advance(1_000);
      await d.runOnce();
      await receiver.waitFor(start + 2);
      [delivery] = await deliveries(id);
      assert.equal(delivery!.attempts, 2);
      // The schedule says 5 min; the receiver asked for 10.
      assert.equal(Date.parse(delivery!.nextAttemptAt!), ctx.clock.now + 600_000);
      ctx.clock.advance(300_000);
      await d.runOnce();
      assert.equal(receiver.requests.length, start + 2, 'Retry-After holds it back past the schedule');
      ctx.clock.advance(300_000);
      await d.runOnce();
      await receiver.waitFor(start + 3);
      [delivery] = await deliveries(id);
      assert.equal(delivery!.status, 'succeeded');
      assert.equal(delivery!.attempts, 3);
    });

    test('410 Gone disables the endpoint; its later events are not delivered', async () => {
      await clearEndpoints();
      const { id } = await createEndpoint();
      await insertEvent(ctx.database, { type: 'pet.deleted' });
      receiver.answers.push({ status: 410 });
      const start = receiver.requests.length;
      const d = dispatcher();
      await d.runOnce();
      const endpoint = (await api('GET', `/webhook-endpoints/${id}`)).json();
      assert.equal(endpoint.enabled, false);
      assert.match(endpoint.disabledReason, /410/);
      assert.equal((await deliveries(id))[0]!.status, 'failed');
      await insertEvent(ctx.database, { type: 'pet.created' });
      await d.runOnce();
      assert.equal(receiver.requests.length, start + 1);
      assert.equal((await deliveries(id)).length, 1);
    });

    test('rotation: for 24 h deliveries carry two signatures, each verifying with its secret', async () => {
      await clearEndpoints();
      const { id, secret: old } = await createEndpoint();
      const rotated = await api('POST', `/webhook-endpoints/${id}/rotate-secret`);
      assert.equal(rotated.statusCode, 200);
      const fresh = rotated.json<{ secret: string }>().secret;
      assert.notEqual(fresh, old);
      await insertEvent(ctx.database, { type: 'pet.created' });
      const start = receiver.requests.length;
      await dispatcher().runOnce();
      const request = (await receiver.waitFor(start + 1))[start]!;
      const signatures = request.headers['webhook-signature']!.split(' ');
      assert.equal(signatures.length, 2);
      for (const [secret, signature] of [
        [fresh, signatures[0]],
        [old, signatures[1]],
      ] as const) {
        new Webhook(secret).verify(request.body, { ...request.headers, 'webhook-signature': signature! });
      }
    });

    test('SSRF: loopback refused unless allowed, private addresses refused after resolution', async () => {
      await clearEndpoints();
      const { id: loop } = await createEndpoint();
      const { id: internal } = await createEndpoint({ url: 'https://internal.example/hook', events: ['*'] });
      await insertEvent(ctx.database, { type: 'pet.created' });
      const start = receiver.requests.length;
      const strict = dispatcher({
        allowHosts: [],
        resolve: async (host) =>
          host === 'internal.example'
            ? [{ address: '10.1.2.3', family: 4 }]
            : [{ address: '127.0.0.1', family: 4 }],
      });
      await strict.runOnce();
      assert.equal(receiver.requests.length, start, 'nothing reached the receiver');
      const [refusedLoop] = await deliveries(loop);
      assert.equal(refusedLoop!.status, 'pending');
      assert.equal(refusedLoop!.lastError, 'address_not_allowed');
      const [refusedPrivate] = await deliveries(internal);
      assert.equal(refusedPrivate!.lastError, 'address_not_allowed');
    });

    test('at least once: a delivery whose dispatcher died is delivered by another after the lease', async () => {
      await clearEndpoints();
      const { id } = await createEndpoint();
      const event = await insertEvent(ctx.database, { type: 'pet.created' });
      const repo = ctx.database.repository(webhookRepository);
      // The dead dispatcher: fanned out and claimed, then never answered.
      assert.equal(await repo.fanOut(ctx.clock.now, 10), 1);
      const claimed = await repo.claim({
        now: ctx.clock.now,
        leaseUntil: ctx.clock.now + 30_000,
        limit: 10,
        busyEndpoints: [],
      });
      assert.equal(claimed.length, 1);
      const start = receiver.requests.length;
      const survivor = dispatcher();
      await survivor.runOnce();
      assert.equal(receiver.requests.length, start, 'leased: not sent while the lease holds');
      ctx.clock.advance(30_001);
      await survivor.runOnce();
      const request = (await receiver.waitFor(start + 1))[start]!;
      assert.equal(request.headers['webhook-id'], event.id);
      assert.equal((await deliveries(id))[0]!.status, 'succeeded');
      // The dead one's late answer is dropped: its lease token no longer holds.
      assert.deepEqual(
        await repo.completeAll(
          [
            {
              id: claimed[0]!.id,
              leaseToken: claimed[0]!.leaseToken,
              outcome: { kind: 'succeeded', statusCode: 200 },
            },
          ],
          ctx.clock.now,
          1,
        ),
        [false],
      );
    });

    test('a claim leases at most the per-endpoint room; a batch of completions drops only stale leases', async () => {
      await clearEndpoints();
      const { id } = await createEndpoint();
      for (let i = 0; i < 3; i++) await insertEvent(ctx.database, { type: 'pet.created' });
      const repo = ctx.database.repository(webhookRepository);
      assert.equal(await repo.fanOut(ctx.clock.now, 10), 3);
      const claim = () =>
        repo.claim({
          now: ctx.clock.now,
          leaseUntil: ctx.clock.now + 30_000,
          limit: 10,
          busyEndpoints: [],
          perEndpoint: 2,
          inFlight: { [id]: 1 },
        });
      const [first, ...more] = await claim();
      assert.ok(first);
      assert.equal(more.length, 0, 'room for one: 2 per endpoint, 1 already in flight');
      const [second] = await claim();
      assert.ok(second);
      const held = await repo.completeAll(
        [
          { id: first.id, leaseToken: first.leaseToken, outcome: { kind: 'succeeded', statusCode: 200 } },
          { id: second.id, leaseToken: 'stale', outcome: { kind: 'succeeded', statusCode: 204 } },
        ],
        ctx.clock.now,
        1,
      );
      assert.deepEqual(held, [true, false]);
      const byId = new Map((await deliveries(id)).map((d) => [d.id, d]));
      assert.equal(byId.get(first.id)!.status, 'succeeded');
      assert.equal(byId.get(first.id)!.lastStatusCode, 200);
      assert.equal(byId.get(second.id)!.status, 'pending');
      assert.equal(byId.get(second.id)!.attempts, 0);
    });

    test('a hanging receiver delays neither another endpoint nor API answers', async () => {
      await clearEndpoints();
      const hanging = new Receiver();
      const hangUrl = await hanging.start();
      hanging.answers.push({ hang: true, status: 200 });
      try {
        await createEndpoint({ url: hangUrl, events: ['*'] });
        const { id } = await createEndpoint();
        await insertEvent(ctx.database, { type: 'pet.created' });
        const start = receiver.requests.length;
        // The hanging attempt never completes, so the first attempt on record is the other endpoint's.
        let recorded!: (kinds: readonly string[]) => void;
        const firstRecorded = new Promise<readonly string[]>((resolve) => (recorded = resolve));
        const d = dispatcher({ timeoutMs: 60_000, onRecorded: (kinds) => recorded(kinds) });
        d.start();
        await hanging.waitFor(1);
        await receiver.waitFor(start + 1);
        assert.deepEqual(await firstRecorded, ['succeeded']);
        assert.equal((await api('GET', '/webhook-endpoints')).statusCode, 200);
        assert.equal((await deliveries(id))[0]!.status, 'succeeded');
        await d.stop();
      } finally {
        await hanging.close();
      }
    });

    test('while the API is busy, deliveries start one per endpoint; otherwise up to its share', async () => {
      for (const busy of [true, false]) {
        await clearEndpoints();
        const hanging = new Receiver();
        const hangUrl = await hanging.start();
        for (let i = 0; i < 20; i++) hanging.answers.push({ hang: true, status: 200 });
        try {
          const { id } = await createEndpoint({ url: hangUrl, events: ['*'] });
          for (let i = 0; i < 5; i++) await insertEvent(ctx.database, { type: 'pet.created' });
          // No poll and no completion (the receiver hangs): the first pass is the only one.
          const d = dispatcher({ timeoutMs: 60_000, pollMs: 3_600_000, busy: () => busy });
          d.start();
          await hanging.waitFor(1);
          // The claim leases before sending: what the dispatcher did not take is still claimable.
          const total = (await deliveries(id)).length;
          const now = ctx.clock.now;
          const left = await ctx.database.repository(webhookRepository).claim({
            now,
            leaseUntil: now + 60_000,
            limit: 100,
            busyEndpoints: [],
            perEndpoint: 100,
            inFlight: {},
          });
          assert.ok(total >= 5);
          assert.equal(total - left.length, busy ? 1 : Math.min(total, 16), `busy: ${busy}`);
          await d.stop();
        } finally {
          await hanging.close();
        }
      }
    });

    test('metrics: outcomes counted, queue depth and oldest age gauged', async () => {
      await clearEndpoints();
      const { Registry } = await import('prom-client');
      const registry = new Registry();
      await createEndpoint();
      await insertEvent(ctx.database, { type: 'pet.created' });
      receiver.answers.push({ status: 500 });
      const d = dispatcher({ registry });
      await d.runOnce();
      const text = await registry.metrics();
      assert.match(text, /^pet_adoption_webhook_delivery_attempts_total\{outcome="http_error"\} 1$/m);
      assert.match(text, /^pet_adoption_webhook_queue_depth 1$/m);
      assert.match(text, /^pet_adoption_webhook_oldest_pending_age_seconds \d/m);
    });

    test('metrics: a scrape reads the queue figures from memory, not from the database', async () => {
      await clearEndpoints();
      const { Registry } = await import('prom-client');
      const registry = new Registry();
      await createEndpoint();
      await insertEvent(ctx.database, { type: 'pet.created' });
      receiver.answers.push({ status: 500 });
      const repo = ctx.database.repository(webhookRepository);
      const stats = repo.stats.bind(repo);
      let queries = 0;
      repo.stats = () => {
        queries++;
        return stats();
      };
      try {
        const d = dispatcher({ registry });
        await d.runOnce();
        const refreshed = queries;
        for (let i = 0; i < 3; i++) await registry.metrics();
        assert.equal(queries, refreshed, 'no query per scrape');
        assert.match(await registry.metrics(), /^pet_adoption_webhook_queue_depth 1$/m);
      } finally {
        Reflect.deleteProperty(repo, 'stats');
      }
    });
  });
}
