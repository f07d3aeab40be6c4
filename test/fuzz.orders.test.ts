/**
 * Property-based tests of the store routes (placeOrder, listOrders, getOrder, approve / deliver / cancel,
 * getInventory): random bodies, query strings, path ids and conditional headers, sent by a manager and by
 * two partners, through real storage. The invariants of test/fuzz.test.ts hold (never a 5xx, every error
 * the Error shape), and nothing is half-written: the number of orders grows by exactly the number of
 * (non-replayed) 201s, after every write each order's pet is in the status its order implies, a pet has at
 * most one open order and an account at most MAX_OPEN_ORDERS.
 *
 * Seeded like test/fuzz.test.ts (FUZZ_SEED, FUZZ_RUNS).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { orderRepository, type OrderRecord } from '../src/modules/orders/repository.js';
import { ORDER_STATUSES } from '../src/modules/orders/schemas.js';
import { PET_STATUSES } from '../src/modules/pets/schemas.js';
import { backends, bearer, createTestContext, type TestContext } from './helpers.js';
import {
  anyString,
  assertWellFormed,
  headerValue,
  pathSegment,
  printable,
  RUNS,
  SEED,
  SETTINGS,
  StatusTally,
  TEST_TIMEOUT,
} from './support/fuzz.js';
import { availablePet, PET_FOR_ORDER } from './support/orders.js';

const MAX_OPEN = 3;
const ACTIONS = ['approve', 'deliver', 'cancel'] as const;
const TO: Record<(typeof ACTIONS)[number], string> = {
  approve: 'approved',
  deliver: 'delivered',
  cancel: 'cancelled',
};
const RFC3339_UTC_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function isOrder(value: unknown, withAccount: boolean): boolean {
  const order = value as Record<string, unknown>;
  return (
    typeof order === 'object' &&
    order !== null &&
    Number.isSafeInteger(order.id) &&
    (order.id as number) > 0 &&
    Number.isSafeInteger(order.petId) &&
    (ORDER_STATUSES as readonly unknown[]).includes(order.status) &&
    RFC3339_UTC_MS.test(String(order.createdAt)) &&
    RFC3339_UTC_MS.test(String(order.updatedAt)) &&
    (withAccount ? typeof order.account === 'string' : !('account' in order)) &&
    Object.keys(order).length === (withAccount ? 6 : 5)
  );
}

/** Entity tags and lists of them, right, wrong and malformed. */
const etagLike = fc.oneof(
  fc.constant(undefined),
  fc.constantFrom('*', '"1"', '"2"', '"3"', 'W/"1"', '"1", "2"', '"2", "3"', '""', '"', 'W/*', ' "1" '),
  headerValue,
);

for (const backend of await backends()) {
  describe(`fuzz orders [${backend.name}] (seed ${SEED}, ${RUNS} runs)`, () => {
    let ctx: TestContext;
    /** Every scope: sees every order and its account. */
    let manager: string;
    let partners: string[];
    /** Who may act on which order: the placing key's index in `keys` (0 is the manager). */
    const owner = new Map<number, number>();
    /** Orders last seen placed or approved, which the actions mostly aim at. */
    const open = new Set<number>();
    /** Order statuses seen in successful responses. */
    const seen = new Set<string>();
    let keys: string[];
    /** Pets created for ordering; they cycle through available, pending, sold. */
    const pool: number[] = [];
    let placed = 0;
    let baseline = 0;
    const tally = new StatusTally();

    async function allOrders(): Promise<OrderRecord[]> {
      const orders: OrderRecord[] = [];
      for (;;) {
        const page = await ctx.database
          .repository(orderRepository)
          .list({ limit: 1000, afterId: orders.at(-1)?.id });
        orders.push(...page);
        if (page.length < 1000) return orders;
      }
    }

    /** Nothing half-written: the order count, each pet against its latest order, the open-order limits. */
    async function assertConsistent(label: string): Promise<void> {
      const orders = await allOrders();
      assert.equal(orders.length, baseline + placed, `${label}: orders grow only by the 201s`);
      const latest = new Map<number, OrderRecord>();
      const openPerPet = new Map<number, number>();
      const openPerAccount = new Map<number, number>();
      for (const order of orders) {
        latest.set(order.petId, order);
        if (order.status === 'placed' || order.status === 'approved') {
          openPerPet.set(order.petId, (openPerPet.get(order.petId) ?? 0) + 1);
          openPerAccount.set(order.accountId, (openPerAccount.get(order.accountId) ?? 0) + 1);
        }
      }
      for (const [petId, order] of latest) {
        const pet = await ctx.pets.get(petId);
        assert.equal(
          pet?.pet.status,
          PET_FOR_ORDER[order.status],
          `${label}: pet ${petId} vs order ${order.id}`,
        );
      }
      for (const [petId, n] of openPerPet) assert.ok(n <= 1, `${label}: pet ${petId} has ${n} open orders`);
      for (const [account, n] of openPerAccount) {
        assert.ok(n <= MAX_OPEN, `${label}: account ${account} holds ${n} open orders`);
      }
    }

    /** Sends, checks the invariants, tracks placements; after every POST checks consistency. */
    async function send(options: InjectOptions, label: string, by: number): Promise<LightMyRequestResponse> {
      const res = await ctx.app.inject(options);
      assertWellFormed(res, label);
      tally.add(res.statusCode);
      if (options.method === 'POST') {
        if (res.statusCode === 201 && res.headers['idempotent-replayed'] !== 'true') {
          placed++;
          owner.set(res.json().id, by);
        }
        if (res.statusCode === 200 || res.statusCode === 201) {
          const order = res.json() as { id: number; status: string };
          seen.add(order.status);
          if (order.status === 'placed' || order.status === 'approved') open.add(order.id);
          else open.delete(order.id);
        }
        await assertConsistent(label);
      }
      return res;
    }

    /** An id that is mostly a real order (or a real pet), sometimes one past the end or a random one. */
    function idFrom(ids: () => number[]) {
      return fc.oneof(
        { arbitrary: fc.nat().map((i) => ids()[i % Math.max(1, ids().length)] ?? 1), weight: 6 },
        fc.integer({ min: 1, max: 1_000_000 }),
      );
    }
    const orderId = fc.oneof(
      { arbitrary: idFrom(() => [...open]), weight: 3 },
      idFrom(() => [...owner.keys()]),
    );
    const petId = idFrom(() => pool);
    /** Whose key: mostly the manager's (who may do everything), else one of the partners'. */
    const who = fc.oneof({ arbitrary: fc.constant(0), weight: 3 }, fc.constantFrom(1, 2));

    before(async () => {
      ctx = await createTestContext(backend, {
        config: { unauthenticatedPerMinute: 1_000_000_000, maxOpenOrders: MAX_OPEN },
      });
      const limits = { plan: 'enterprise' as const, perMinute: 1_000_000_000, perDay: 1_000_000_000 };
      ({ key: manager } = await ctx.createKey(limits));
      partners = [];
      for (let i = 0; i < 2; i++) {
        partners.push((await ctx.createKey({ ...limits, scopes: ['orders:write', 'pets:read'] })).key);
      }
      keys = [manager, ...partners];
      for (let i = 0; i < 60; i++) pool.push(await availablePet(ctx.app, manager));
      baseline = (await allOrders()).length;
    });
    after(() => ctx.close());

    test(
      'random placeOrder bodies, media types and Idempotency-Keys',
      { timeout: TEST_TIMEOUT },
      async (t) => {
        const body = fc.oneof(
          { arbitrary: petId.map((id) => ({ petId: id })), weight: 4 },
          fc.record(
            {
              petId: fc.oneof(
                petId,
                fc.constantFrom(0, -1, 1.5, 2 ** 53, '1', null, true, [1], { id: 1 }),
                fc.double(),
                anyString,
              ),
              extra: fc.jsonValue({ maxDepth: 2 }),
            },
            { requiredKeys: [] },
          ),
          fc.jsonValue(),
        );
        const payload = fc.oneof(
          { arbitrary: body.map((b) => JSON.stringify(b) ?? 'null'), weight: 6 },
          anyString,
          fc.constant('x'.repeat(17_000)),
        );
        const contentType = fc.oneof(
          { arbitrary: fc.constant('application/json'), weight: 6 },
          fc.constantFrom('application/json; charset=utf-8', 'text/plain', 'application/merge-patch+json'),
          headerValue,
        );
        const idempotencyKey = fc.oneof(
          { arbitrary: fc.constant(undefined), weight: 3 },
          fc.constantFrom('k1', 'k2'),
          headerValue,
        );
        await fc.assert(
          fc.asyncProperty(who, payload, contentType, idempotencyKey, async (by, sent, type, idem) => {
            const headers: Record<string, string> = { ...bearer(keys[by]!), 'content-type': type };
            if (idem !== undefined) headers['idempotency-key'] = idem;
            const label = `POST /v1/store/orders ${JSON.stringify(headers)} ${sent.slice(0, 200)}`;
            const res = await send(
              { method: 'POST', url: '/v1/store/orders', headers, payload: sent },
              label,
              by,
            );
            assert.ok([201, 400, 409, 413, 415, 422].includes(res.statusCode), `${label}: ${res.statusCode}`);
            if (res.statusCode === 201) {
              const order = res.json();
              assert.ok(isOrder(order, by === 0), res.body);
              assert.equal(res.headers.location, `/v1/store/orders/${order.id}`);
              if (res.headers['idempotent-replayed'] !== 'true') {
                assert.equal(order.petId, (JSON.parse(sent) as { petId: number }).petId);
                assert.equal(order.status, 'placed');
              }
            }
            // Keep pets coming back so later runs can place again: the manager cancels now and then.
            if (res.statusCode === 409 && by === 0) {
              const open = (await allOrders()).find((o) => o.status === 'placed');
              if (open) {
                const cancel = { method: 'POST' as const, url: `/v1/store/orders/${open.id}/cancel` };
                await send({ ...cancel, headers: bearer(manager) }, `cancel ${open.id}`, 0);
              }
            }
          }),
          SETTINGS,
        );
        tally.report(t, [201, 400, 409, 415]);
      },
    );

    test(
      'random approve / deliver / cancel on random ids, with bodies, If-Match and Idempotency-Keys',
      { timeout: TEST_TIMEOUT },
      async (t) => {
        const segment = fc.oneof({ arbitrary: orderId.map(String), weight: 6 }, pathSegment);
        const body = fc.oneof(
          { arbitrary: fc.constant(undefined), weight: 4 },
          fc.constant('{}'),
          fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v) ?? 'null'),
          anyString,
        );
        const idempotencyKey = fc.oneof(
          { arbitrary: fc.constant(undefined), weight: 3 },
          fc.constantFrom('a1', 'a2'),
          headerValue,
        );
        const step = fc.record({
          action: fc.oneof(fc.constantFrom(...ACTIONS), fc.constant('place' as const)),
          by: who,
          segment,
          pet: petId,
          body,
          ifMatch: fc.oneof({ arbitrary: fc.constant(undefined), weight: 4 }, etagLike),
          idem: idempotencyKey,
        });
        await fc.assert(
          fc.asyncProperty(step, async ({ action, by, segment: x, pet, body: sent, ifMatch, idem }) => {
            const headers: Record<string, string> = { ...bearer(keys[by]!) };
            if (action === 'place') {
              // Placements interleaved, so the orders keep moving through every status.
              await send(
                { method: 'POST', url: '/v1/store/orders', headers, payload: { petId: pet } },
                `place ${pet}`,
                by,
              );
              return;
            }
            if (sent !== undefined) headers['content-type'] = 'application/json';
            if (ifMatch !== undefined) headers['if-match'] = ifMatch;
            if (idem !== undefined) headers['idempotency-key'] = idem;
            const url = `/v1/store/orders/${x}/${action}`;
            const before = Number.isSafeInteger(Number(x))
              ? await ctx.database.repository(orderRepository).get(Number(x))
              : undefined;
            const options: InjectOptions = { method: 'POST', url, headers };
            if (sent !== undefined) options.payload = sent;
            const label = `POST ${url} ${JSON.stringify(headers)} ${String(sent).slice(0, 100)}`;
            const res = await send(options, label, by);
            assert.ok(
              [200, 400, 403, 404, 409, 412, 413, 415, 422].includes(res.statusCode),
              `${label}: ${res.statusCode}`,
            );
            if (res.statusCode === 200) {
              const order = res.json();
              assert.ok(isOrder(order, by === 0), res.body);
              assert.equal(
                res.headers.etag,
                `"${(await ctx.database.repository(orderRepository).get(order.id))?.version}"`,
              );
              if (res.headers['idempotent-replayed'] !== 'true') {
                assert.equal(order.status, TO[action], label);
                assert.ok(before, `${label}: acted on an existing order`);
                assert.ok(by === 0 || owner.get(before.id) === by, `${label}: only its owner or a manager`);
              }
            }
            // Partners may not approve or deliver; nobody sees another partner's order.
            if (by !== 0 && action !== 'cancel') assert.notEqual(res.statusCode, 200, label);
            if (res.statusCode === 412) assert.match(String(res.headers.etag), /^"\d+"$/, label);
          }),
          SETTINGS,
        );
        tally.report(t, [200, 201, 400, 403, 404, 409, 412]);
      },
    );

    test(
      'random query strings and If-None-Match for GET /v1/store/orders',
      { timeout: TEST_TIMEOUT },
      async (t) => {
        const page = await ctx.app.inject({ url: '/v1/store/orders?limit=2', headers: bearer(manager) });
        const cursor = /cursor=([^&>]+)/.exec(String(page.headers.link))?.[1];
        assert.ok(cursor, 'a real cursor to start from');
        const name = fc.oneof(
          { arbitrary: fc.constantFrom('limit', 'status', 'cursor', 'petId'), weight: 4 },
          fc.constantFrom('offset', 'account', 'limit[]', ''),
          printable,
        );
        const value = fc.oneof(
          fc.integer({ min: -5, max: 150 }).map(String),
          petId.map(String),
          fc.constantFrom(
            ...ORDER_STATUSES,
            ...PET_STATUSES,
            cursor,
            `${cursor}A`,
            'aWQ6MQ',
            '1e1',
            ' 5',
            '',
          ),
          fc.double().map(String),
          fc.string(),
        );
        const query = fc
          .array(fc.tuple(name, value), { maxLength: 4 })
          .map((pairs) =>
            pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&'),
          );
        await fc.assert(
          fc.asyncProperty(who, query, etagLike, async (by, q, inm) => {
            const url = `/v1/store/orders?${q}`;
            const headers: Record<string, string> = { ...bearer(keys[by]!) };
            if (inm !== undefined) headers['if-none-match'] = inm;
            const res = await send({ url, headers }, `GET ${url} ${inm}`, by);
            assert.ok([200, 304, 400].includes(res.statusCode), `${url}: ${res.statusCode} ${res.body}`);
            if (res.statusCode !== 200) return;
            const orders = res.json() as { id: number; status: string; petId: number }[];
            assert.ok(Array.isArray(orders) && orders.every((o) => isOrder(o, by === 0)), res.body);
            assert.match(String(res.headers.etag), /^W\/"/);
            const params = new URLSearchParams(q);
            assert.ok(orders.length <= Number(params.get('limit') ?? 20), url);
            for (const field of ['status', 'petId'] as const) {
              const wanted = params.get(field);
              if (wanted !== null)
                assert.ok(
                  orders.every((o) => String(o[field]) === wanted),
                  url,
                );
            }
            if (by !== 0)
              assert.ok(
                orders.every((o) => owner.get(o.id) === by),
                `${url}: only own orders`,
              );
            const ids = orders.map((o) => o.id);
            assert.deepEqual(
              ids,
              [...ids].sort((a, b) => a - b),
              'ordered by id',
            );
            // The same page again with its own ETag: 304.
            const again = await send(
              { url, headers: { ...headers, 'if-none-match': String(res.headers.etag) } },
              url,
              by,
            );
            assert.equal(again.statusCode, 304, url);
          }),
          SETTINGS,
        );
        tally.report(t, [200, 304, 400]);
      },
    );

    test(
      'random path ids and If-None-Match for GET /v1/store/orders/{x}',
      { timeout: TEST_TIMEOUT },
      async (t) => {
        const segment = fc.oneof({ arbitrary: orderId.map(String), weight: 3 }, pathSegment);
        await fc.assert(
          fc.asyncProperty(who, segment, etagLike, async (by, x, inm) => {
            const url = `/v1/store/orders/${x}`;
            const headers: Record<string, string> = { ...bearer(keys[by]!) };
            if (inm !== undefined) headers['if-none-match'] = inm;
            const res = await send({ url, headers }, `GET ${url} ${inm}`, by);
            assert.ok([200, 304, 400, 404].includes(res.statusCode), `${url}: ${res.statusCode} ${res.body}`);
            if (res.statusCode === 200) {
              const order = res.json();
              assert.ok(isOrder(order, by === 0), res.body);
              assert.equal(
                String(order.id),
                String(Number(decodeURIComponent(x))),
                `${url} returns that order`,
              );
              assert.ok(by === 0 || owner.get(order.id) === by, `${url}: only its owner or a manager`);
            }
          }),
          SETTINGS,
        );
        tally.report(t, [200, 304, 400, 404]);
      },
    );

    test('getInventory under random queries and headers matches the pets stored', async (t) => {
      await fc.assert(
        fc.asyncProperty(fc.nat({ max: 3 }), printable, headerValue, async (by, q, inm) => {
          const headers = by === 3 ? {} : { ...bearer(keys[by]!), 'if-none-match': inm };
          const res = await send(
            { url: `/v1/store/inventory?${q.replace(/#/g, '')}`, headers },
            'inventory',
            by,
          );
          if (by === 3) return assert.equal(res.statusCode, 401);
          assert.equal(res.statusCode, 200, res.body);
          const counts = { available: 0, pending: 0, sold: 0 };
          for (let afterId: number | undefined; ;) {
            const page = await ctx.pets.list({ limit: 1000, afterId });
            for (const pet of page) counts[pet.status]++;
            if (page.length < 1000) break;
            afterId = page.at(-1)!.id;
          }
          assert.deepEqual(res.json(), counts);
        }),
        { ...SETTINGS, numRuns: Math.min(RUNS, 50) },
      );
      tally.report(t, [200, 401]);
    });

    test('in the end, the orders stored are exactly the ones acknowledged with 201, each with its pet', async () => {
      assert.ok(placed > 0, 'the generators placed some orders');
      assert.deepEqual([...seen].sort(), [...ORDER_STATUSES].sort(), 'orders went through every status');
      await assertConsistent('at the end');
    });
  });
}
