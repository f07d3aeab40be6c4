/**
 * What a webhook endpoint may receive and how many an account may hold, on every backend, through the real
 * HTTP layer and the real dispatcher with real receivers on 127.0.0.1:
 *
 * - an endpoint never holds more authority than a live key of its account: revoked keys stop its events at
 *   fan-out and at send time; redirecting it or retrying its deliveries needs the scopes its events need;
 * - `scope` shows whether it receives every account's orders or its own;
 * - MAX_WEBHOOK_ENDPOINTS per account and one endpoint per URL, also when requests race;
 * - fan-out in bounded transactions still reaches every endpoint once;
 * - `lastError` is a category, the details go to the attempt's log line.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { WebhookDispatcher } from '../src/modules/webhooks/dispatcher.js';
import { webhookRepository } from '../src/modules/webhooks/repository.js';
import { backends, bearer, createTestContext, TestClock, type TestContext } from './helpers.js';
import { insertEvent, Receiver } from './support/webhooks.js';

const ALLOW = ['127.0.0.1'];

interface Delivery {
  id: number;
  eventType: string;
  status: string;
  attempts: number;
  lastError: string | null;
}

for (const backend of await backends()) {
  describe(`webhook trust and bounds [${backend.name}]`, () => {
    let ctx: TestContext;
    const receivers: Receiver[] = [];
    const dispatchers: WebhookDispatcher[] = [];

    const receiver = async (): Promise<{ receiver: Receiver; url: string }> => {
      const r = new Receiver();
      receivers.push(r);
      return { receiver: r, url: await r.start() };
    };
    const dispatcher = (options: Partial<ConstructorParameters<typeof WebhookDispatcher>[0]> = {}) => {
      const d = new WebhookDispatcher({
        database: ctx.database,
        clock: ctx.clock.fn,
        allowHosts: ALLOW,
        pollMs: 3_600_000,
        random: () => 0.5,
        ...options,
      });
      dispatchers.push(d);
      return d;
    };
    const api = (method: string, path: string, key: string, payload?: object) =>
      ctx.app.inject({ method: method as 'GET', url: `/v1${path}`, headers: bearer(key), payload });
    const create = async (key: string, body: object) => {
      const res = await api('POST', '/webhook-endpoints', key, body);
      assert.equal(res.statusCode, 201, res.body);
      return res.json<{ id: number; scope: string }>();
    };
    const deliveries = async (id: number, key: string) => {
      const res = await api('GET', `/webhook-endpoints/${id}/deliveries?limit=100`, key);
      assert.equal(res.statusCode, 200, res.body);
      return res.json<Delivery[]>();
    };
    const placeOrder = async (key: string) => {
      const pet = await api('POST', '/pets', key, { name: 'Rex', categoryId: 1 });
      assert.equal(pet.statusCode, 201, pet.body);
      const order = await api('POST', '/store/orders', key, { petId: pet.json<{ id: number }>().id });
      assert.equal(order.statusCode, 201, order.body);
    };
    const assertInsufficient = (
      res: Awaited<ReturnType<typeof api>>,
      scopes: readonly string[],
      label: string,
    ) => {
      assert.equal(res.statusCode, 403, `${label}: ${res.body}`);
      assert.equal(res.json().code, 'insufficient_scope', label);
      for (const scope of scopes) assert.ok(res.json().message.includes(scope), `${label}: ${res.body}`);
      assert.match(String(res.headers['www-authenticate']), /error="insufficient_scope", scope="/, label);
    };

    before(async () => {
      ctx = await createTestContext(backend, {
        config: { webhookAllowHosts: ALLOW },
        clock: new TestClock(Date.now()),
      });
    });
    after(async () => {
      await Promise.all(dispatchers.map((d) => d.stop()));
      await Promise.all(receivers.map((r) => r.close()));
      await ctx.close();
    });

    test('a revoked key takes its authority with it: no delivery after it, no redirect, no retry', async () => {
      const { receiver: original, url: originalUrl } = await receiver();
      const { receiver: elsewhere, url: elsewhereUrl } = await receiver();
      const full = await ctx.createKey({ name: 'revoked-owner' });
      const { key: hooksOnly } = await ctx.createKey({ name: 'revoked-owner', scopes: ['webhooks:write'] });
      const { key: other } = await ctx.createKey({ name: 'revoked-other' });
      const endpoint = await create(full.key, { url: originalUrl, events: ['*'] });
      assert.equal(endpoint.scope, 'all');

      // Another account's order is queued for the endpoint while the full key is live.
      await placeOrder(other);
      const repo = ctx.database.repository(webhookRepository);
      await repo.fanOut(ctx.clock.now, 100);
      const queued = await deliveries(endpoint.id, hooksOnly);
      assert.ok(
        queued.some((d) => d.eventType === 'order.placed' && d.status === 'pending'),
        JSON.stringify(queued),
      );

      assert.ok(await ctx.accounts.revokeKey(full.id, ctx.clock.now));
      const shown = await api('GET', `/webhook-endpoints/${endpoint.id}`, hooksOnly);
      assert.equal(shown.json().scope, 'own', 'no live key with orders:manage');

      // webhooks:write alone may not point the endpoint elsewhere, nor change what it receives.
      const redirect = await api('PATCH', `/webhook-endpoints/${endpoint.id}`, hooksOnly, {
        url: elsewhereUrl,
      });
      assertInsufficient(redirect, ['events:read', 'orders:read', 'orders:manage'], 'PATCH url');
      const narrow = await api('PATCH', `/webhook-endpoints/${endpoint.id}`, hooksOnly, {
        events: ['order.placed'],
      });
      assertInsufficient(narrow, ['orders:read'], 'PATCH events');
      assert.equal(
        (await api('GET', `/webhook-endpoints/${endpoint.id}`, hooksOnly)).json().url,
        originalUrl,
      );
      const retry = await api(
        'POST',
        `/webhook-endpoints/${endpoint.id}/deliveries/${queued[0]!.id}/retry`,
        hooksOnly,
      );
      assertInsufficient(retry, ['orders:read'], 'retry');

      // What was queued before the revocation is not sent; what comes after is not queued.
      await dispatcher().runOnce();
      const after = await deliveries(endpoint.id, hooksOnly);
      assert.equal(after.length, queued.length);
      for (const d of after) {
        assert.equal(d.status, 'failed', JSON.stringify(d));
        assert.equal(d.lastError, 'not_authorized');
        assert.equal(d.attempts, 0, 'never attempted');
      }
      await placeOrder(other);
      await dispatcher().runOnce();
      assert.equal((await deliveries(endpoint.id, hooksOnly)).length, queued.length, 'nothing new queued');
      assert.equal(original.requests.length, 0);
      assert.equal(elsewhere.requests.length, 0);
    });

    test('each event type needs a live key with its read scope; the account’s own orders need orders:read', async () => {
      const { receiver: hook, url } = await receiver();
      const petsOnly = await ctx.createKey({
        name: 'reader-account',
        scopes: ['webhooks:write', 'pets:read', 'orders:read'],
      });
      const endpoint = await create(petsOnly.key, { url, events: ['*'] });
      assert.equal(endpoint.scope, 'own');
      const account = (await ctx.accounts.findAccount('reader-account'))!;
      const { key: stranger } = await ctx.createKey({ name: 'reader-stranger' });
      await insertEvent(ctx.database, { type: 'order.placed', accountId: account.id });
      await placeOrder(stranger); // pet.created, pet.updated and another account's order.placed
      await ctx.createKey({ name: 'reader-account', scopes: ['webhooks:write'] });
      await dispatcher().runOnce();
      const types = (await deliveries(endpoint.id, petsOnly.key)).map((d) => d.eventType).sort();
      assert.deepEqual(types, ['order.placed', 'pet.created', 'pet.updated']);
      await hook.waitFor(3);
      // The account's only key able to read is revoked: later events reach the endpoint no more.
      assert.ok(await ctx.accounts.revokeKey(petsOnly.id, ctx.clock.now));
      await insertEvent(ctx.database, { type: 'pet.created' });
      await insertEvent(ctx.database, { type: 'order.placed', accountId: account.id });
      await ctx.database.repository(webhookRepository).fanOut(ctx.clock.now, 100);
      const { key: reader } = await ctx.createKey({
        name: 'reader-account',
        scopes: ['webhooks:write', 'events:read', 'orders:read'],
      });
      assert.equal((await deliveries(endpoint.id, reader)).length, 3, 'nothing fanned out without a reader');
    });

    test('scope: all while the account holds a live orders:manage key and the endpoint was made with it', async () => {
      const manager = await ctx.createKey({
        name: 'scope-account',
        scopes: ['webhooks:write', 'orders:manage', 'events:read'],
      });
      const { key: ownReader } = await ctx.createKey({
        name: 'scope-account',
        scopes: ['webhooks:write', 'orders:read', 'events:read'],
      });
      const { url } = await receiver();
      const all = await create(manager.key, { url: `${url}?all`, events: ['order.placed'] });
      const own = await create(ownReader, { url: `${url}?own`, events: ['order.placed'] });
      assert.equal(all.scope, 'all');
      assert.equal(own.scope, 'own', 'made by a key without orders:manage');
      const listed = (await api('GET', '/webhook-endpoints', ownReader)).json<
        { id: number; scope: string }[]
      >();
      assert.deepEqual(
        listed.map((e) => [e.id, e.scope]),
        [
          [all.id, 'all'],
          [own.id, 'own'],
        ],
      );
      // Another account's order reaches the `all` endpoint only.
      const { key: stranger } = await ctx.createKey({ name: 'scope-stranger' });
      await placeOrder(stranger);
      await dispatcher().runOnce();
      assert.deepEqual(
        (await deliveries(all.id, ownReader)).map((d) => d.eventType),
        ['order.placed'],
      );
      assert.deepEqual(await deliveries(own.id, ownReader), []);
      // Changing the `all` endpoint needs orders:manage.
      const patch = await api('PATCH', `/webhook-endpoints/${all.id}`, ownReader, { url: `${url}?moved` });
      assertInsufficient(patch, ['orders:manage'], 'PATCH an all-orders endpoint');
      assert.ok(await ctx.accounts.revokeKey(manager.id, ctx.clock.now));
      assert.equal((await api('GET', `/webhook-endpoints/${all.id}`, ownReader)).json().scope, 'own');
    });

    test('retry needs the scopes the endpoint’s events need', async () => {
      const { url } = await receiver();
      const { key: full } = await ctx.createKey({ name: 'retry-account' });
      const { key: hooksOnly } = await ctx.createKey({ name: 'retry-account', scopes: ['webhooks:write'] });
      const { key: petReader } = await ctx.createKey({
        name: 'retry-account',
        scopes: ['webhooks:write', 'pets:read'],
      });
      const endpoint = await create(full, { url, events: ['pet.created'] });
      await insertEvent(ctx.database, { type: 'pet.created' });
      await dispatcher().runOnce();
      const [delivery] = await deliveries(endpoint.id, full);
      assert.equal(delivery!.status, 'succeeded');
      const path = `/webhook-endpoints/${endpoint.id}/deliveries/${delivery!.id}/retry`;
      assertInsufficient(await api('POST', path, hooksOnly), ['events:read', 'pets:read'], 'retry');
      const allowed = await api('POST', path, petReader);
      assert.equal(allowed.statusCode, 202, allowed.body);
      assert.equal(allowed.json().status, 'pending');
    });

    test('MAX_WEBHOOK_ENDPOINTS (16): the 17th is 409 webhook_endpoint_limit, also when creations race', async () => {
      const { key } = await ctx.createKey({ name: 'limit-account' });
      const { url } = await receiver();
      const ids: number[] = [];
      for (let i = 0; i < 15; i++) ids.push((await create(key, { url: `${url}?n=${i}`, events: ['*'] })).id);
      const racing = await Promise.all(
        [15, 16, 17, 18].map((i) =>
          api('POST', '/webhook-endpoints', key, { url: `${url}?n=${i}`, events: ['*'] }),
        ),
      );
      assert.deepEqual(racing.map((r) => r.statusCode).sort(), [201, 409, 409, 409]);
      const refused = racing.find((r) => r.statusCode === 409)!;
      assert.equal(refused.json().code, 'webhook_endpoint_limit');
      assert.match(refused.json().message, /16/);
      const listed = (await api('GET', '/webhook-endpoints?limit=100', key)).json<{ id: number }[]>();
      assert.equal(listed.length, 16);
      // Another account has its own room; a deleted endpoint frees one.
      const { key: other } = await ctx.createKey({ name: 'limit-other' });
      await create(other, { url: `${url}?n=99`, events: ['*'] });
      assert.equal((await api('DELETE', `/webhook-endpoints/${ids[0]}`, key)).statusCode, 204);
      await create(key, { url: `${url}?n=100`, events: ['*'] });
    });

    test('the same URL twice in an account is 409 webhook_endpoint_exists, also when creations race', async () => {
      const { key } = await ctx.createKey({ name: 'dup-account' });
      const { url } = await receiver();
      const first = await create(key, { url, events: ['pet.created'] });
      const again = await api('POST', '/webhook-endpoints', key, { url, events: ['*'] });
      assert.equal(again.statusCode, 409, again.body);
      assert.equal(again.json().code, 'webhook_endpoint_exists');
      const racing = await Promise.all(
        [1, 2, 3, 4].map(() => api('POST', '/webhook-endpoints', key, { url: `${url}?race`, events: ['*'] })),
      );
      assert.deepEqual(racing.map((r) => r.statusCode).sort(), [201, 409, 409, 409]);
      assert.ok(
        racing.filter((r) => r.statusCode === 409).every((r) => r.json().code === 'webhook_endpoint_exists'),
      );
      // Changing another endpoint to the URL is refused the same way; another account may use it.
      const second = await create(key, { url: `${url}?second`, events: ['*'] });
      const moved = await api('PATCH', `/webhook-endpoints/${second.id}`, key, { url });
      assert.equal(moved.statusCode, 409, moved.body);
      assert.equal(moved.json().code, 'webhook_endpoint_exists');
      const { key: other } = await ctx.createKey({ name: 'dup-other' });
      await create(other, { url, events: ['*'] });
      assert.equal((await api('GET', `/webhook-endpoints/${first.id}`, key)).json().url, url);
    });

    test('a fan-out larger than one transaction’s rows reaches every endpoint once', async () => {
      const { url } = await receiver();
      const made: { id: number; key: string }[] = [];
      for (let a = 0; a < 3; a++) {
        const { key } = await ctx.createKey({ name: `fan-account-${a}` });
        for (let i = 0; i < 3; i++)
          made.push({
            key,
            id: (await create(key, { url: `${url}?${a}-${i}`, events: ['pet.deleted'] })).id,
          });
      }
      for (let i = 0; i < 2; i++) await insertEvent(ctx.database, { type: 'pet.deleted' });
      const repo = ctx.database.repository(webhookRepository);
      // Two rows per transaction: 18 deliveries in 9 transactions.
      assert.equal(await repo.fanOut(ctx.clock.now, 100, 2), 2);
      assert.equal(await repo.fanOut(ctx.clock.now, 100, 2), 0, 'every event marked dispatched');
      for (const { id, key } of made) {
        assert.deepEqual(
          (await deliveries(id, key)).map((d) => d.eventType),
          ['pet.deleted', 'pet.deleted'],
        );
      }
      for (const { id, key } of made) await api('DELETE', `/webhook-endpoints/${id}`, key);
    });

    test('lastError is a category; what the resolver and the socket said goes to the log line', async () => {
      const { key } = await ctx.createKey({ name: 'errors-account' });
      const { receiver: failing, url } = await receiver();
      failing.answers.push({ status: 500 });
      const closed = http.createServer();
      closed.listen(0, '127.0.0.1');
      await once(closed, 'listening');
      const closedPort = (closed.address() as AddressInfo).port;
      await new Promise<void>((resolve) => closed.close(() => resolve()));
      // Speaks plain HTTP where TLS is expected: the handshake fails.
      // The client side of a failed handshake may stay half open: destroyed at the end, not waited for.
      const sockets = new Set<net.Socket>();
      const plain = net.createServer((socket) => {
        sockets.add(socket);
        socket.on('error', () => {});
        socket.end('HTTP/1.1 200 OK\r\n\r\n');
      });
      plain.listen(0, '127.0.0.1');
      await once(plain, 'listening');
      const plainPort = (plain.address() as AddressInfo).port;
      const endpoints = {
        dns: await create(key, { url: 'https://no-such-host.invalid/hook', events: ['pet.created'] }),
        private: await create(key, { url: 'https://10.11.12.13/hook', events: ['pet.created'] }),
        refused: await create(key, { url: `http://127.0.0.1:${closedPort}/hook`, events: ['pet.created'] }),
        http: await create(key, { url, events: ['pet.created'] }),
        tls: await create(key, { url: `https://127.0.0.1:${plainPort}/hook`, events: ['pet.created'] }),
      };
      await insertEvent(ctx.database, { type: 'pet.created' });
      const logged: Record<string, unknown>[] = [];
      const logger = { info: (obj: object) => logged.push(obj as Record<string, unknown>), warn: () => {} };
      // Earlier tests' endpoints have deliveries of their own: pass until each of these was attempted.
      const d = dispatcher({ logger });
      const attempted = async () => {
        for (const { id } of Object.values(endpoints)) {
          if ((await deliveries(id, key))[0]?.attempts !== 1) return false;
        }
        return true;
      };
      for (let round = 0; round < 20 && !(await attempted()); round++) await d.runOnce();
      const expected = {
        dns: 'dns_failed',
        private: 'address_not_allowed',
        refused: 'connect_failed',
        http: 'http_500',
        tls: 'tls_failed',
      } as const;
      for (const [name, category] of Object.entries(expected)) {
        const [delivery] = await deliveries(endpoints[name as keyof typeof endpoints].id, key);
        assert.equal(delivery!.lastError, category, name);
        assert.equal(delivery!.status, 'pending', name);
      }
      const details = logged.map((l) => `${String(l.lastError)} ${String(l.detail)}`).join('\n');
      assert.match(details, /dns_failed .*no-such-host\.invalid/);
      assert.match(details, /address_not_allowed .*10\.11\.12\.13/);
      assert.match(details, new RegExp(`connect_failed .*ECONNREFUSED.*${closedPort}`));
      for (const { id } of Object.values(endpoints)) await api('DELETE', `/webhook-endpoints/${id}`, key);
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => plain.close(() => resolve()));
    });
  });
}
