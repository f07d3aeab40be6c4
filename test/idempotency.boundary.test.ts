/**
 * An idempotent replay never answers what the live request could not see: idempotency records belong to
 * the account, so two keys of one account share them, and a key may replay a stored answer only when its
 * scopes and the ownership rules would let it see that answer now. Otherwise the request runs as if it
 * carried no key. Both backends, through the HTTP layer.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { backends, bearer, createTestContext, type TestContext } from './helpers.js';
import { assertV1Error } from './support/assertions.js';
import { act, availablePet, newOrder, placeOrder } from './support/orders.js';

for (const backend of await backends()) {
  describe(`idempotency across keys [${backend.name}]`, () => {
    let ctx: TestContext;
    /** Account C, orders:manage: may act on every account's orders. */
    let manager: string;
    /** Account C again, orders:write only: its own orders and nothing else. */
    let writer: string;
    /** Account C again, read scopes only. */
    let reader: string;
    /** Account B: places orders. */
    let customer: string;

    before(async () => {
      ctx = await createTestContext(backend, { config: { maxOpenOrders: 1000 } });
      ({ key: manager } = await ctx.createKey({
        name: 'account-c',
        scopes: ['orders:manage', 'pets:write'],
      }));
      ({ key: writer } = await ctx.createKey({ name: 'account-c', scopes: ['orders:write'] }));
      ({ key: reader } = await ctx.createKey({ name: 'account-c', scopes: ['orders:read', 'pets:read'] }));
      ({ key: customer } = await ctx.createKey({
        name: 'account-b',
        scopes: ['orders:write', 'pets:write'],
      }));
    });
    after(() => ctx.close());

    test("a replay of another account's order is not answered to a key that cannot see it", async () => {
      const { id } = await newOrder(ctx.app, customer);
      const first = await act(ctx.app, manager, id, 'cancel', { 'idempotency-key': 'k1' });
      assert.equal(first.statusCode, 200, first.body);

      const withoutKey = await act(ctx.app, writer, id, 'cancel');
      assertV1Error(withoutKey, 404, 'order_not_found', 'the writer cannot see B’s order');
      const withKey = await act(ctx.app, writer, id, 'cancel', { 'idempotency-key': 'k1' });
      assertV1Error(withKey, 404, 'order_not_found', 'the same key must not reveal it');
      assert.equal(withKey.headers['idempotent-replayed'], undefined);

      // The record is untouched: the key that wrote it still gets its replay.
      const again = await act(ctx.app, manager, id, 'cancel', { 'idempotency-key': 'k1' });
      assert.equal(again.statusCode, 200, again.body);
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.deepEqual(again.json(), first.json());
    });

    test("a replay of the account's own order is answered to any key with the route's scope", async () => {
      const { id } = await newOrder(ctx.app, manager);
      const first = await act(ctx.app, manager, id, 'cancel', { 'idempotency-key': 'k2' });
      assert.equal(first.statusCode, 200, first.body);
      const replayed = await act(ctx.app, writer, id, 'cancel', { 'idempotency-key': 'k2' });
      assert.equal(replayed.statusCode, 200, replayed.body);
      assert.equal(replayed.headers['idempotent-replayed'], 'true');
      // Rendered for the live key: a key without orders:manage is not shown the account.
      assert.equal(first.json().account, 'account-c');
      assert.equal(replayed.json().account, undefined);
      assert.equal(replayed.json().id, id);

      const petId = await availablePet(ctx.app, manager);
      const placed = await placeOrder(ctx.app, manager, petId, { 'idempotency-key': 'k3' });
      assert.equal(placed.statusCode, 201, placed.body);
      const placedAgain = await placeOrder(ctx.app, writer, petId, { 'idempotency-key': 'k3' });
      assert.equal(placedAgain.statusCode, 201, placedAgain.body);
      assert.equal(placedAgain.headers['idempotent-replayed'], 'true');
      assert.equal(placedAgain.json().id, placed.json().id);
    });

    test('a key without the operation’s scope is refused, not answered with the stored response', async () => {
      const { id } = await newOrder(ctx.app, customer);
      const approved = await act(ctx.app, manager, id, 'approve', { 'idempotency-key': 'k4' });
      assert.equal(approved.statusCode, 200, approved.body);
      const narrowed = await act(ctx.app, writer, id, 'approve', { 'idempotency-key': 'k4' });
      assertV1Error(narrowed, 403, 'insufficient_scope', 'approve needs orders:manage');
      assert.equal(narrowed.headers['idempotent-replayed'], undefined);

      const created = await ctx.app.inject({
        method: 'POST',
        url: '/v1/pets',
        headers: { ...bearer(manager), 'idempotency-key': 'k5' },
        payload: { name: 'Replayed', categoryId: 1 },
      });
      assert.equal(created.statusCode, 201, created.body);
      const pet = created.json().id as number;
      const writes = [
        { method: 'POST' as const, url: '/v1/pets', payload: { name: 'Replayed', categoryId: 1 }, key: 'k5' },
        { method: 'PATCH' as const, url: `/v1/pets/${pet}`, payload: { name: 'Renamed' }, key: 'k6' },
        { method: 'DELETE' as const, url: `/v1/pets/${pet}`, key: 'k7' },
      ];
      for (const { key, ...request } of writes) {
        const live = await ctx.app.inject({
          ...request,
          headers: { ...bearer(manager), 'idempotency-key': key },
        });
        assert.ok(live.statusCode < 300, `${request.method}: ${live.body}`);
        const replay = await ctx.app.inject({
          ...request,
          headers: { ...bearer(reader), 'idempotency-key': key },
        });
        assertV1Error(replay, 403, 'insufficient_scope', `${request.method} ${request.url} by a reader`);
        assert.equal(replay.headers['idempotent-replayed'], undefined);
      }
    });
  });
}
