/**
 * The outbox and the feed (DESIGN 4.4) through HTTP on every backend: one event per change with the exact
 * object, previous values and version; none for a refused or failed write (fault injected after the real
 * insert); paging and polling by Link; the type filter; visibility of order events; validation.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { InjectOptions } from 'fastify';
import { buildEvent, newEventId } from '../src/modules/events/index.js';
import { backends, bearer, countPets, createTestContext, type TestContext } from './helpers.js';
import { assertV1Error } from './support/assertions.js';
import { appendEvent, feedPoller, readFeed, type FeedEvent } from './support/events.js';
import { refusePetEvents } from './support/faults.js';
import { insertOrderRow } from './support/order-rows.js';

const MERGE_PATCH = { 'content-type': 'application/merge-patch+json' };
const EVENT_ID = /^evt_[0-9a-f]{24}$/;

test('event ids of one process ascend (time, then a counter within the millisecond) and never repeat', () => {
  const now = Date.now();
  const ids = [...Array.from({ length: 1000 }, () => newEventId(now)), newEventId(now + 1)];
  for (const id of ids) assert.match(id, EVENT_ID);
  assert.deepEqual([...ids].sort(), ids);
  assert.equal(new Set(ids).size, ids.length);
});

for (const backend of await backends()) {
  describe(`events [${backend.name}]`, () => {
    let ctx: TestContext;
    let key: string;
    let orderAccountId: number;

    before(async () => {
      ctx = await createTestContext(backend);
      ({ key } = await ctx.createKey());
      orderAccountId = (
        await ctx.accounts.upsertAccount({ name: 'orders-owner', plan: 'business' }, ctx.clock.now)
      ).id;
    });
    after(() => ctx.close());

    const request = (options: InjectOptions) =>
      ctx.app.inject({
        ...options,
        headers: { ...bearer(key), ...(options.headers as Record<string, string>) },
      });
    const createPet = async (name: string, status?: string) => {
      const res = await request({
        method: 'POST',
        url: '/v1/pets',
        payload: { name, categoryId: 1, status },
      });
      assert.equal(res.statusCode, 201, res.body);
      return res.json() as { id: number; name: string; categoryId: number; status: string };
    };
    const patch = (id: number, payload: unknown, headers: Record<string, string> = {}) =>
      request({
        method: 'PATCH',
        url: `/v1/pets/${id}`,
        headers: { ...MERGE_PATCH, ...headers },
        payload: JSON.stringify(payload),
      });
    /** Events since the previous call of this suite's poller (the whole feed, followed by Link). */
    let poller: ReturnType<typeof feedPoller>;
    const newEvents = () => (poller ??= feedPoller(ctx.app, key)).poll();
    const at = () => new Date(ctx.clock.now).toISOString();

    const assertEvent = (
      event: FeedEvent | undefined,
      expected: { type: string; object: unknown; previous: unknown; version: number; timestamp: string },
    ) => {
      assert.ok(event, `an event ${expected.type}`);
      assert.match(event.id, EVENT_ID);
      assert.deepEqual(event, {
        id: event.id,
        type: expected.type,
        timestamp: expected.timestamp,
        data: {
          object: expected.object,
          previous: expected.previous,
          version: expected.version,
        },
      });
    };

    test('one event per change of a pet: created, renamed, status changed, deleted, with the exact object and previous values', async () => {
      await newEvents();
      ctx.clock.advance(1000);
      const created = await createPet('Rex');
      const t1 = at();
      ctx.clock.advance(1000);
      const renamed = await patch(created.id, { name: 'Rexy' });
      assert.equal(renamed.statusCode, 200, renamed.body);
      const t2 = at();
      ctx.clock.advance(1000);
      const sold = await patch(created.id, { status: 'sold', categoryId: 2 });
      assert.equal(sold.statusCode, 200, sold.body);
      const t3 = at();
      ctx.clock.advance(1000);
      const deleted = await request({ method: 'DELETE', url: `/v1/pets/${created.id}` });
      assert.equal(deleted.statusCode, 204, deleted.body);
      const t4 = at();

      const events = await newEvents();
      assert.equal(events.length, 4, JSON.stringify(events));
      assertEvent(events[0], {
        type: 'pet.created',
        object: created,
        previous: {},
        version: 1,
        timestamp: t1,
      });
      assertEvent(events[1], {
        type: 'pet.updated',
        object: { ...created, name: 'Rexy' },
        previous: { name: 'Rex' },
        version: 2,
        timestamp: t2,
      });
      const soldPet = { ...created, name: 'Rexy', status: 'sold', categoryId: 2 };
      assert.deepEqual(sold.json(), soldPet);
      assertEvent(events[2], {
        type: 'pet.updated',
        object: soldPet,
        previous: { status: 'available', categoryId: 1 },
        version: 3,
        timestamp: t3,
      });
      assertEvent(events[3], {
        type: 'pet.deleted',
        object: soldPet,
        previous: {},
        version: 3,
        timestamp: t4,
      });
      assert.equal(new Set(events.map((e) => e.id)).size, 4, 'ids are unique');
    });

    test('no event for a refused write: validation, unknown category, stale If-Match (412), open order (409), replay', async () => {
      const pet = await createPet('Guarded');
      await newEvents();
      const refusals = [
        await request({ method: 'POST', url: '/v1/pets', payload: { name: '', categoryId: 1 } }),
        await request({ method: 'POST', url: '/v1/pets', payload: { name: 'A', categoryId: 999_999 } }),
        await patch(pet.id, { categoryId: 999_999 }),
        await patch(pet.id, { name: 'x', id: 3 }),
        await patch(pet.id, { name: 'Stale' }, { 'if-match': '"7"' }),
        await request({ method: 'DELETE', url: `/v1/pets/${pet.id}`, headers: { 'if-match': '"7"' } }),
        await patch(999_999, { name: 'Nobody' }),
      ];
      await insertOrderRow(ctx.database, {
        accountId: orderAccountId,
        petId: pet.id,
        status: 'placed',
        now: ctx.clock.now,
      });
      refusals.push(await patch(pet.id, { status: 'sold' }));
      refusals.push(await request({ method: 'DELETE', url: `/v1/pets/${pet.id}` }));
      assert.deepEqual(
        refusals.map((r) => r.statusCode),
        [400, 400, 400, 400, 412, 412, 404, 409, 409],
      );
      assert.deepEqual(await newEvents(), [], 'no event for a refused write');

      // A replay under the same Idempotency-Key repeats the answer, not the change: one event.
      const post = () =>
        request({
          method: 'POST',
          url: '/v1/pets',
          headers: { 'idempotency-key': 'ev-once' },
          payload: { name: 'Once', categoryId: 1 },
        });
      assert.equal((await post()).statusCode, 201);
      const replay = await post();
      assert.equal(replay.headers['idempotent-replayed'], 'true');
      assert.deepEqual(
        (await newEvents()).map((e) => e.type),
        ['pet.created'],
      );
    });

    test('a creation whose event the database refuses writes no pet and no event; the others of the same turn keep theirs', async () => {
      await newEvents();
      const before = await countPets(ctx.database);
      const restore = await refusePetEvents(ctx.database, 'Two');
      let results;
      try {
        // One event-loop turn: one batch on either backend. After the failure the others are written again
        // (SQLite: the batch with a savepoint per write; PostgreSQL: one by one), the refused one fails again.
        results = await Promise.all(
          ['One', 'Two', 'Three'].map((name) =>
            request({ method: 'POST', url: '/v1/pets', payload: { name, categoryId: 1 } }),
          ),
        );
      } finally {
        await restore();
      }
      assert.deepEqual(
        results.map((r) => r.statusCode),
        [201, 500, 201],
      );
      assertV1Error(results[1]!, 500, 'internal_error', 'the refused creation');
      assert.doesNotMatch(results[1]!.body, /injected/, 'the database error stays in the log');
      const ok = [results[0]!, results[2]!].map((r) => r.json() as { id: number; name: string });
      assert.equal(await countPets(ctx.database), before + 2, 'no pet was kept for the refused event');
      const events = await newEvents();
      assert.deepEqual(
        events.map((e) => e.type),
        ['pet.created', 'pet.created'],
      );
      assert.deepEqual(
        events.map((e) => e.data.object),
        ok,
      );
    });

    test('paging and polling: every page carries Link; following it to the end, then new events arrive on the last link', async () => {
      await newEvents();
      const start = await readFeed(ctx.app, key, '/v1/events?limit=100');
      // Drain to the current end, remembering the link that polls from there.
      let tail = start.next;
      for (let page = start; page.events.length > 0;) {
        page = await readFeed(ctx.app, key, page.next);
        tail = page.next;
      }
      const pets = [];
      for (const name of ['P1', 'P2', 'P3', 'P4', 'P5']) pets.push(await createPet(name));
      const limited = tail.replace('limit=100', 'limit=2');
      const seen: FeedEvent[] = [];
      const sizes: number[] = [];
      let next = limited;
      for (;;) {
        const page = await readFeed(ctx.app, key, next);
        sizes.push(page.events.length);
        seen.push(...page.events);
        if (page.events.length === 0) {
          assert.equal(page.next, next, 'an empty page links to the same cursor');
          break;
        }
        next = page.next;
      }
      assert.deepEqual(sizes, [2, 2, 1, 0]);
      assert.deepEqual(
        seen.map((e) => e.data.object),
        pets,
      );
      const more = [await createPet('P6'), await createPet('P7')];
      const polled = await readFeed(ctx.app, key, next);
      assert.deepEqual(
        polled.events.map((e) => e.data.object),
        more,
      );
      assert.deepEqual((await readFeed(ctx.app, key, polled.next)).events, []);
    });

    test('the first page of an empty feed links to the beginning; the type filter and its Link', async () => {
      const other = await createTestContext(backend);
      try {
        const { key: k } = await other.createKey();
        const empty = await readFeed(other.app, k, '/v1/events?type=pet.created&limit=5');
        assert.deepEqual(empty.events, []);
        assert.equal(empty.next, '/v1/events?limit=5&type=pet.created');
        const res = await other.app.inject({
          method: 'POST',
          url: '/v1/pets',
          headers: bearer(k),
          payload: { name: 'F', categoryId: 1 },
        });
        const pet = res.json() as { id: number };
        await other.app.inject({
          method: 'PATCH',
          url: `/v1/pets/${pet.id}`,
          headers: { ...bearer(k), ...MERGE_PATCH },
          payload: '{"name":"G"}',
        });
        const created = await readFeed(other.app, k, empty.next);
        assert.deepEqual(
          created.events.map((e) => e.type),
          ['pet.created'],
        );
        assert.match(created.next, /^\/v1\/events\?limit=5&type=pet\.created&cursor=/);
        const updated = await readFeed(other.app, k, '/v1/events?type=pet.updated');
        assert.deepEqual(
          updated.events.map((e) => e.data.previous),
          [{ name: 'F' }],
        );
      } finally {
        await other.close();
      }
    });

    test('orders: placed, approved, delivered and cancelled, each with the pet.updated of its status move; none for a refused move', async () => {
      const pet = await createPet('Orderly');
      await newEvents();
      const act = async (url: string, payload?: Record<string, unknown>) => {
        ctx.clock.advance(1000);
        const res = await request({ method: 'POST', url, payload });
        return { res, timestamp: at() };
      };
      const withoutAccount = (res: { json(): unknown }) => {
        const order = res.json() as Record<string, unknown>;
        delete order.account;
        return order;
      };
      const placed = await act('/v1/store/orders', { petId: pet.id });
      assert.equal(placed.res.statusCode, 201, placed.res.body);
      const orderId = (placed.res.json() as { id: number }).id;
      const approved = await act(`/v1/store/orders/${orderId}/approve`);
      const refused = await act(`/v1/store/orders/${orderId}/approve`);
      assert.equal(refused.res.statusCode, 409, refused.res.body);
      const delivered = await act(`/v1/store/orders/${orderId}/deliver`);
      assert.equal(delivered.res.statusCode, 200, delivered.res.body);
      const events = await newEvents();
      assert.deepEqual(
        events.map((e) => e.type),
        ['order.placed', 'pet.updated', 'order.approved', 'order.delivered', 'pet.updated'],
      );
      const [p0, p1, a0, d0, d1] = events;
      const placedOrder = withoutAccount(placed.res);
      assertEvent(p0, {
        type: 'order.placed',
        object: placedOrder,
        previous: {},
        version: 1,
        timestamp: placed.timestamp,
      });
      assertEvent(p1, {
        type: 'pet.updated',
        object: { ...pet, status: 'pending' },
        previous: { status: 'available' },
        version: 2,
        timestamp: placed.timestamp,
      });
      assertEvent(a0, {
        type: 'order.approved',
        object: withoutAccount(approved.res),
        previous: { status: 'placed', updatedAt: placedOrder.updatedAt },
        version: 2,
        timestamp: approved.timestamp,
      });
      assertEvent(d0, {
        type: 'order.delivered',
        object: withoutAccount(delivered.res),
        previous: { status: 'approved', updatedAt: withoutAccount(approved.res).updatedAt },
        version: 3,
        timestamp: delivered.timestamp,
      });
      assertEvent(d1, {
        type: 'pet.updated',
        object: { ...pet, status: 'sold' },
        previous: { status: 'pending' },
        version: 3,
        timestamp: delivered.timestamp,
      });

      const other = await createPet('Cancelled');
      const second = await act('/v1/store/orders', { petId: other.id });
      const secondId = (second.res.json() as { id: number }).id;
      const unavailable = await act('/v1/store/orders', { petId: other.id });
      assert.equal(unavailable.res.statusCode, 409, unavailable.res.body);
      const cancelled = await act(`/v1/store/orders/${secondId}/cancel`);
      assert.equal(cancelled.res.statusCode, 200, cancelled.res.body);
      assert.deepEqual(
        (await newEvents()).map((e) => `${e.type}:${String(e.data.previous.status)}`),
        [
          'pet.created:undefined',
          'order.placed:undefined',
          'pet.updated:available',
          'order.cancelled:placed',
          'pet.updated:pending',
        ],
      );
    });

    test('query validation: unknown type, limit out of range, foreign cursor, unknown parameter → 400', async () => {
      for (const url of [
        '/v1/events?type=pet.adopted',
        '/v1/events?limit=0',
        '/v1/events?limit=101',
        '/v1/events?since=1',
      ]) {
        assertV1Error(await request({ url }), 400, 'validation_failed', url);
      }
      assertV1Error(await request({ url: '/v1/events?cursor=abc' }), 400, 'invalid_cursor', 'foreign cursor');
    });

    test('visibility: order events only to their account or to orders:manage; pet events to every events:read key', async () => {
      const other = await createTestContext(backend);
      try {
        const ownerA = await other.accounts.upsertAccount(
          { name: 'vis-a', plan: 'business' },
          other.clock.now,
        );
        const ownerB = await other.accounts.upsertAccount(
          { name: 'vis-b', plan: 'business' },
          other.clock.now,
        );
        const { key: readerA } = await other.createKey({ name: 'vis-a', scopes: ['events:read'] });
        const { key: manager } = await other.createKey({
          name: 'vis-c',
          scopes: ['events:read', 'orders:manage'],
        });
        const { key: noScope } = await other.createKey({
          name: 'vis-d',
          scopes: ['pets:read', 'orders:read'],
        });
        const order = (id: number, accountId: number) =>
          buildEvent(
            'order.placed',
            { object: { id, petId: 1, status: 'placed' }, version: 1 },
            other.clock.now,
            accountId,
          );
        await appendEvent(other.database, order(1, ownerA.id));
        await appendEvent(other.database, order(2, ownerB.id));
        await appendEvent(
          other.database,
          buildEvent('pet.created', { object: { id: 1 }, version: 1 }, other.clock.now),
        );
        const seen = async (k: string, url = '/v1/events') =>
          (await readFeed(other.app, k, url)).events.map((e) => `${e.type}:${String(e.data.object.id)}`);
        assert.deepEqual(await seen(readerA), ['order.placed:1', 'pet.created:1']);
        assert.deepEqual(await seen(manager), ['order.placed:1', 'order.placed:2', 'pet.created:1']);
        assert.deepEqual(await seen(readerA, '/v1/events?type=order.placed'), ['order.placed:1']);
        const denied = await other.app.inject({ url: '/v1/events', headers: bearer(noScope) });
        assertV1Error(denied, 403, 'insufficient_scope', 'without events:read');
      } finally {
        await other.close();
      }
    });
  });
}
