/**
 * Writes of one event-loop turn (DESIGN 4.2, 4.3, 4.4) through HTTP on every backend. On SQLite the changes,
 * removals, placements and actions of a turn share one transaction (group commit, SqliteDatabase.writeInTurn),
 * each in its own savepoint; on PostgreSQL those without an Idempotency-Key share one transaction per turn and
 * are run again one by one when it fails, and those with a key have their own. Either way: a write that fails
 * after its real update is rolled back alone, with its event and its idempotency record, while the others of
 * the turn commit; and no write is answered before it is committed (read back on another connection at the
 * moment its answer arrives).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import BetterSqlite3 from 'better-sqlite3';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import type { PoolClient } from 'pg';
import { buildApp } from '../src/app.js';
import { StorageUnavailableError, type Database } from '../src/db/database.js';
import { PostgresDatabase } from '../src/db/postgres.js';
import { SqliteDatabase } from '../src/db/sqlite.js';
import {
  backends,
  bearer,
  createTestContext,
  defaultTestConfig,
  postgresRedis,
  type TestContext,
} from './helpers.js';
import { postgresUrl } from '../support/postgres.js';
import { createTestRedisStore } from '../support/redis.js';
import { externalServicesAvailable } from '../support/services.js';
import { assertV1Error } from './support/assertions.js';
import { feedPoller } from './support/events.js';
import { failAfterWrite } from './support/faults.js';
import { act, availablePet, newOrder, petStatus, placeOrder } from './support/orders.js';

const MERGE_PATCH = { 'content-type': 'application/merge-patch+json' };

/** Reads one row on a connection other than the service's: what it returns is committed. */
function otherConnection(database: Database): {
  row<T>(sql: string, ...values: unknown[]): Promise<T | undefined>;
  close(): void;
} {
  if (database instanceof SqliteDatabase) {
    const other = new BetterSqlite3(database.db.name, { readonly: true });
    return {
      row: <T>(sql: string, ...values: unknown[]) =>
        Promise.resolve(other.prepare<unknown[], T>(sql).get(...values)),
      close: () => other.close(),
    };
  }
  assert.ok(database instanceof PostgresDatabase);
  return {
    // A pooled connection other than the one of a transaction still open: it sees committed rows only.
    async row<T>(sql: string, ...values: unknown[]) {
      let n = 0;
      const text = sql.replace(/\?/g, () => `$${++n}`);
      const [row] = await database.query<T & Record<string, unknown>>({ text, values });
      return row as T | undefined;
    },
    close: () => undefined,
  };
}

/** The 2xx responses and the one 503 of a turn in which exactly one write was made to fail. */
function oneFailed(responses: LightMyRequestResponse[], ok: number): { failed: number; succeeded: number[] } {
  const statuses = responses.map((r) => r.statusCode);
  assert.equal(statuses.filter((s) => s === ok).length, responses.length - 1, statuses.join(','));
  const failed = statuses.findIndex((s) => s !== ok);
  assertV1Error(responses[failed]!, 503, 'service_unavailable', 'the failed write');
  return { failed, succeeded: statuses.flatMap((s, i) => (s === ok ? [i] : [])) };
}

/**
 * Watches the transactions begun on a PostgreSQL database (none on SQLite): how many, and the errors of those
 * that failed (a deadlock among them would otherwise be hidden by a batch's retry of its writes one by one).
 */
function watchTransactions(database: Database): { begun: number; failed: unknown[]; restore(): void } {
  const watch = { begun: 0, failed: [] as unknown[], restore: () => undefined as void };
  if (!(database instanceof PostgresDatabase)) return watch;
  const original = database.transaction.bind(database);
  database.transaction = <T>(fn: (client: PoolClient) => Promise<T>): Promise<T> => {
    watch.begun++;
    return original(fn).catch((error: unknown) => {
      watch.failed.push(error);
      throw error;
    });
  };
  watch.restore = () => {
    delete (database as { transaction?: unknown }).transaction;
  };
  return watch;
}

/** The error code of an error answer. */
const codeOf = (res: LightMyRequestResponse): string => (res.json() as { code: string }).code;

for (const backend of await backends()) {
  describe(`writes of one turn [${backend.name}]`, () => {
    let ctx: TestContext;
    let key: string;
    let poller: ReturnType<typeof feedPoller>;
    const sqlite = backend.name.startsWith('sqlite');

    before(async () => {
      ctx = await createTestContext(backend, { config: { maxOpenOrders: 1000 } });
      ({ key } = await ctx.createKey({ name: 'turn-staff' }));
      poller = feedPoller(ctx.app, key);
    });
    after(() => ctx.close());

    const request = (options: InjectOptions) =>
      ctx.app.inject({
        ...options,
        headers: { ...bearer(key), ...(options.headers as Record<string, string>) },
      });
    const patch = (id: number, name: string, headers: Record<string, string> = {}) =>
      request({
        method: 'PATCH',
        url: `/v1/pets/${id}`,
        headers: { ...MERGE_PATCH, ...headers },
        payload: JSON.stringify({ name }),
      });
    /** Makes the `nth` write of `target` fail after its real update; returns how many were attempted. */
    async function withFailure<T>(
      target: 'pets' | 'orders',
      nth: number,
      run: () => Promise<T>,
    ): Promise<{ result: T; attempts: number }> {
      let attempts = 0;
      const restore = failAfterWrite(ctx.database, target, () =>
        ++attempts === nth ? new StorageUnavailableError(new Error('injected after the write')) : undefined,
      );
      try {
        return { result: await run(), attempts };
      } finally {
        restore();
      }
    }

    test('PATCHes of one turn: one failing after its real update is rolled back alone, with its event and idempotency record', async () => {
      const ids = [await availablePet(ctx.app, key), await availablePet(ctx.app, key)];
      ids.push(await availablePet(ctx.app, key));
      // SQLite runs a turn's writes without a savepoint each, and again with them only when one throws.
      const retries: unknown[] = [];
      if (ctx.database instanceof SqliteDatabase) {
        ctx.database.hooks.onBatchRetry = (error) => retries.push(error);
      }
      const others = [await availablePet(ctx.app, key), await availablePet(ctx.app, key)];
      others.push(await availablePet(ctx.app, key));
      const warmUp = await Promise.all(others.map((id) => patch(id, 'Warm')));
      assert.deepEqual(
        warmUp.map((r) => r.statusCode),
        [200, 200, 200],
      );
      assert.equal(retries.length, 0, 'a turn whose writes all succeed commits at the first attempt');
      await poller.poll();
      const { result, attempts } = await withFailure('pets', 2, () =>
        Promise.all(ids.map((id, i) => patch(id, `Changed ${i}`, { 'idempotency-key': `turn-patch-${i}` }))),
      );
      delete (ctx.database as Partial<SqliteDatabase>).hooks?.onBatchRetry;
      // On SQLite the batch ran again after the failure, the failed write not again: 2 + 2 attempts.
      assert.equal(attempts, sqlite ? 4 : 3, 'the hook ran after each real update');
      assert.equal(retries.length, sqlite ? 1 : 0);
      const { failed, succeeded } = oneFailed(result, 200);
      for (const i of succeeded) {
        const pet = await request({ url: `/v1/pets/${ids[i]}` });
        assert.equal(pet.json().name, `Changed ${i}`);
        assert.equal(pet.headers.etag, '"2"');
      }
      const untouched = await request({ url: `/v1/pets/${ids[failed]}` });
      assert.equal(untouched.json().name, 'Orderable', 'the failed change was rolled back');
      assert.equal(untouched.headers.etag, '"1"', 'and its version with it');
      const events = await poller.poll();
      assert.deepEqual(
        events.map((e) => [e.type, e.data.object.id]).sort(),
        succeeded.map((i) => ['pet.updated', ids[i]]).sort(),
        'one event per committed change, none for the failed one',
      );
      // Its idempotency record went too: the same key now changes the pet, it does not replay a failure.
      const retry = await patch(ids[failed]!, `Changed ${failed}`, {
        'idempotency-key': `turn-patch-${failed}`,
      });
      assert.equal(retry.statusCode, 200, retry.body);
      assert.equal(retry.headers['idempotent-replayed'], undefined);
      assert.equal(retry.headers.etag, '"2"');
      await poller.poll();
    });

    test('PATCHes of one turn without keys: each gets its own answer, and a failing one fails alone', async () => {
      const [a, b, c, d] = [
        await availablePet(ctx.app, key),
        await availablePet(ctx.app, key),
        await availablePet(ctx.app, key),
        await availablePet(ctx.app, key),
      ];
      assert.equal((await placeOrder(ctx.app, key, c!)).statusCode, 201);
      await poller.poll();
      const answers = await Promise.all([
        patch(a!, 'A1'),
        patch(b!, 'B1', { 'if-match': '"7"' }),
        patch(2 ** 40, 'Nobody'),
        request({
          method: 'PATCH',
          url: `/v1/pets/${c}`,
          headers: MERGE_PATCH,
          payload: JSON.stringify({ status: 'sold' }),
        }),
        request({
          method: 'PATCH',
          url: `/v1/pets/${d}`,
          headers: MERGE_PATCH,
          payload: JSON.stringify({ categoryId: 99_999 }),
        }),
        patch(a!, 'A2'),
        patch(d!, 'D1'),
      ]);
      assert.deepEqual(
        answers.map((r) => r.statusCode),
        [200, 412, 404, 409, 400, 200, 200],
        answers.map((r) => r.body).join('\n'),
      );
      assert.deepEqual(
        [answers[0]!.headers.etag, answers[5]!.headers.etag, answers[6]!.headers.etag],
        ['"2"', '"3"', '"2"'],
      );
      assert.equal(answers[5]!.json().name, 'A2');
      const events = await poller.poll();
      assert.deepEqual(
        events.filter((e) => e.data.object.id === a).map((e) => [e.data.object.name, e.data.version]),
        [
          ['A1', 2],
          ['A2', 3],
        ],
        'one event per change of a, in version order',
      );
      assert.deepEqual(
        events.filter((e) => e.data.object.id !== a).map((e) => [e.data.object.id, e.data.object.name]),
        [[d, 'D1']],
        'no event for a refused change',
      );

      const { result, attempts } = await withFailure('pets', 2, () =>
        Promise.all([a!, b!, d!].map((id, i) => patch(id, `Again ${i}`))),
      );
      assert.ok(attempts >= 3, 'the hook ran after each real update');
      const { failed, succeeded } = oneFailed(result, 200);
      for (const i of succeeded) assert.equal(result[i]!.json().name, `Again ${i}`);
      const kept = await request({ url: `/v1/pets/${[a, b, d][failed]}` });
      assert.notEqual(kept.json().name, `Again ${failed}`, 'the failed change was rolled back');
      const after = await poller.poll();
      assert.deepEqual(
        after.map((e) => e.data.object.id).sort(),
        succeeded.map((i) => [a, b, d][i]).sort(),
        'one event per committed change, none for the failed one',
      );
    });

    test('DELETEs of one turn without keys: each gets its own answer', async () => {
      const [a, b, c] = [
        await availablePet(ctx.app, key),
        await availablePet(ctx.app, key),
        await availablePet(ctx.app, key),
      ];
      assert.equal((await placeOrder(ctx.app, key, c!)).statusCode, 201);
      await poller.poll();
      const remove = (id: number, headers: Record<string, string> = {}) =>
        request({ method: 'DELETE', url: `/v1/pets/${id}`, headers });
      const answers = await Promise.all([
        remove(a!),
        remove(b!, { 'if-match': '"7"' }),
        remove(c!),
        remove(a!),
      ]);
      assert.deepEqual(
        answers.map((r) => r.statusCode),
        [204, 412, 409, 404],
        answers.map((r) => r.body).join('\n'),
      );
      assert.deepEqual(
        (await poller.poll()).map((e) => [e.type, e.data.object.id]),
        [['pet.deleted', a]],
      );
    });

    test('a DELETE failing after its real delete keeps the pet; the turn’s other removal commits', async () => {
      const ids = [await availablePet(ctx.app, key), await availablePet(ctx.app, key)];
      await poller.poll();
      const { result } = await withFailure('pets', 1, () =>
        Promise.all(ids.map((id) => request({ method: 'DELETE', url: `/v1/pets/${id}` }))),
      );
      const { failed, succeeded } = oneFailed(result, 204);
      assert.equal((await request({ url: `/v1/pets/${ids[failed]}` })).statusCode, 200);
      assert.equal((await request({ url: `/v1/pets/${ids[succeeded[0]!]}` })).statusCode, 404);
      assert.deepEqual(
        (await poller.poll()).map((e) => [e.type, e.data.object.id]),
        [['pet.deleted', ids[succeeded[0]!]]],
      );
    });

    test('placements of one turn: a failing one leaves its pet available, no order and no event', async () => {
      const pets = [await availablePet(ctx.app, key), await availablePet(ctx.app, key)];
      pets.push(await availablePet(ctx.app, key));
      await poller.poll();
      const { result, attempts } = await withFailure('orders', 2, () =>
        Promise.all(
          pets.map((petId, i) => placeOrder(ctx.app, key, petId, { 'idempotency-key': `turn-order-${i}` })),
        ),
      );
      assert.equal(attempts, sqlite ? 4 : 3);
      const { failed, succeeded } = oneFailed(result, 201);
      assert.equal(await petStatus(ctx.app, key, pets[failed]!), 'available', 'the hold was rolled back');
      const orders = await request({ url: `/v1/store/orders?petId=${pets[failed]}` });
      assert.deepEqual(orders.json(), [], 'no order was kept for it');
      for (const i of succeeded) assert.equal(await petStatus(ctx.app, key, pets[i]!), 'pending');
      const events = await poller.poll();
      assert.deepEqual(events.map((e) => e.type).sort(), [
        'order.placed',
        'order.placed',
        'pet.updated',
        'pet.updated',
      ]);
      assert.ok(
        !events.some((e) => e.data.object.id === pets[failed] || e.data.object.petId === pets[failed]),
      );

      // Its idempotency record went too: the same key now places the order.
      const retry = await placeOrder(ctx.app, key, pets[failed]!, {
        'idempotency-key': `turn-order-${failed}`,
      });
      assert.equal(retry.statusCode, 201, retry.body);
      assert.equal(retry.headers['idempotent-replayed'], undefined);

      // Actions of one turn: a failing cancel leaves its order placed and its pet pending.
      const ids = succeeded.map((i) => (result[i]!.json() as { id: number }).id);
      await poller.poll();
      const cancels = await withFailure('orders', 1, () =>
        Promise.all(ids.map((id) => act(ctx.app, key, id, 'cancel'))),
      );
      const outcome = oneFailed(cancels.result, 200);
      const kept = await request({ url: `/v1/store/orders/${ids[outcome.failed]}` });
      assert.equal(kept.json().status, 'placed');
      assert.equal(await petStatus(ctx.app, key, pets[succeeded[outcome.failed]!]!), 'pending');
      assert.equal(await petStatus(ctx.app, key, pets[succeeded[outcome.succeeded[0]!]!]!), 'available');
      assert.deepEqual((await poller.poll()).map((e) => e.type).sort(), ['order.cancelled', 'pet.updated']);
    });

    test('two placements for one pet in one turn: exactly one 201, the other 409', async () => {
      const petId = await availablePet(ctx.app, key);
      const { key: other } = await ctx.createKey({ name: 'turn-partner', scopes: ['orders:write'] });
      const both = await Promise.all([placeOrder(ctx.app, key, petId), placeOrder(ctx.app, other, petId)]);
      assert.deepEqual(both.map((r) => r.statusCode).sort(), [201, 409]);
      assertV1Error(
        both.find((r) => r.statusCode === 409)!,
        409,
        'pet_not_available',
        'the second',
      );
    });

    test('placements and actions of one turn without keys: each gets its own answer, limits and races exact', async () => {
      const small = await createTestContext(backend, { config: { maxOpenOrders: 3 } });
      try {
        const [a, b, c] = [
          // Without orders:manage: each sees and counts its own orders only.
          (await small.createKey({ name: 'turn-a', scopes: ['orders:write', 'events:read'] })).key,
          (await small.createKey({ name: 'turn-b', scopes: ['orders:write', 'events:read'] })).key,
          (await small.createKey({ name: 'turn-c' })).key,
        ];
        const pets: number[] = [];
        for (let i = 0; i < 8; i++) pets.push(await availablePet(small.app, c));
        const [p0, p1, p2, p3, p4, p5, p6, p7] = pets as [number, ...number[]];
        assert.equal((await placeOrder(small.app, a, p0)).statusCode, 201);
        const id = async (res: Promise<LightMyRequestResponse>) => {
          const answer = await res;
          assert.equal(answer.statusCode, 201, answer.body);
          return (answer.json() as { id: number }).id;
        };
        const x = await id(placeOrder(small.app, c, p5!));
        const y = await id(placeOrder(small.app, c, p6!));
        const z = await id(placeOrder(small.app, c, p7!));
        assert.equal((await act(small.app, c, y, 'approve')).statusCode, 200);
        const cPoller = feedPoller(small.app, c);
        const aPoller = feedPoller(small.app, a);
        const bPoller = feedPoller(small.app, b);
        await Promise.all([cPoller.poll(), aPoller.poll(), bPoller.poll()]);

        const watch = watchTransactions(small.database);
        let answers: LightMyRequestResponse[];
        try {
          answers = await Promise.all([
            placeOrder(small.app, a, p1!),
            placeOrder(small.app, b, p1!),
            placeOrder(small.app, a, p2!),
            placeOrder(small.app, a, p3!),
            placeOrder(small.app, a, p4!),
            placeOrder(small.app, b, 999_999),
            act(small.app, c, x, 'approve'),
            act(small.app, c, x, 'approve'),
            act(small.app, c, y, 'deliver'),
            act(small.app, c, y, 'cancel'),
            act(small.app, c, z, 'cancel', { 'if-match': '"7"' }),
            act(small.app, c, 999_999, 'approve'),
          ]);
        } finally {
          watch.restore();
        }
        const statuses = answers.map((r) => r.statusCode);
        const bodies = answers.map((r) => r.body).join('\n');
        if (!sqlite) {
          // Twelve writes arriving together share transactions (each alone would have begun its own).
          assert.ok(watch.begun <= 5, `${watch.begun} transactions`);
          assert.deepEqual(watch.failed, []);
        }

        // Two accounts ordering one pet: exactly one 201.
        assert.deepEqual([statuses[0], statuses[1]].sort(), [201, 409], bodies);
        assert.equal(codeOf(answers[statuses[0] === 409 ? 0 : 1]!), 'pet_not_available');
        // Account a had one open order of three allowed: exactly two more go through, the rest are refused.
        const ofA = [0, 2, 3, 4].map((i) => answers[i]!);
        assert.equal(ofA.filter((r) => r.statusCode === 201).length, 2, bodies);
        const refusals = ofA.filter((r) => r.statusCode !== 201);
        for (const r of refusals)
          assert.ok(['open_order_limit', 'pet_not_available'].includes(codeOf(r)), r.body);
        assert.ok(
          refusals.some((r) => codeOf(r) === 'open_order_limit'),
          bodies,
        );
        const open = await small.app.inject({ url: '/v1/store/orders?status=placed', headers: bearer(a) });
        assert.equal((open.json() as unknown[]).length, 3, 'account a holds exactly its limit');
        assertV1Error(answers[5]!, 400, 'validation_failed', 'an unknown pet');
        // Two actions racing on one order: exactly one wins.
        assert.deepEqual([statuses[6], statuses[7]].sort(), [200, 409], bodies);
        assert.equal(codeOf(answers[statuses[6] === 409 ? 6 : 7]!), 'invalid_transition');
        assert.deepEqual([statuses[8], statuses[9]].sort(), [200, 409], bodies);
        const delivered = statuses[8] === 200;
        assert.equal(await petStatus(small.app, c, p6!), delivered ? 'sold' : 'available');
        assertV1Error(answers[10]!, 412, 'precondition_failed', 'a cancel under a stale If-Match');
        assertV1Error(answers[11]!, 404, 'order_not_found', 'an unknown order');
        assert.equal(await petStatus(small.app, c, p7!), 'pending', 'the refused cancel changed nothing');

        // One order event per write that went through, each order and pet in version order.
        const [ofC, fromA, fromB] = [await cPoller.poll(), await aPoller.poll(), await bPoller.poll()];
        assert.deepEqual(
          ofC
            .filter((e) => e.type.startsWith('order.') && e.type !== 'order.placed')
            .map((e) => e.type)
            .sort(),
          ['order.approved', delivered ? 'order.delivered' : 'order.cancelled'],
        );
        const placements = statuses.slice(0, 5).filter((s) => s === 201).length;
        assert.equal(
          [...fromA, ...fromB].filter((e) => e.type === 'order.placed').length,
          placements,
          'one order.placed per 201',
        );
        const petEvents = ofC.filter((e) => e.type === 'pet.updated');
        assert.equal(
          petEvents.length,
          placements + 1,
          'one pet move per placement, and the deliver or cancel',
        );
        for (const pet of pets) {
          const versions = petEvents.filter((e) => e.data.object.id === pet).map((e) => e.data.version);
          assert.deepEqual(
            versions,
            [...versions].sort((m, n) => m - n),
          );
        }
      } finally {
        await small.close();
      }
    });

    test('one failing write among a turn’s placements and actions fails alone', async () => {
      const [p1, p2] = [await availablePet(ctx.app, key), await availablePet(ctx.app, key)];
      const { id: placed } = await newOrder(ctx.app, key);
      const { id: other, petId: otherPet } = await newOrder(ctx.app, key);
      await poller.poll();
      const { result, attempts } = await withFailure('orders', 2, () =>
        Promise.all([
          placeOrder(ctx.app, key, p1),
          act(ctx.app, key, placed, 'approve'),
          placeOrder(ctx.app, key, p2),
          act(ctx.app, key, other, 'cancel'),
        ]),
      );
      const statuses = result.map((r) => r.statusCode);
      const bodies = result.map((r) => r.body).join('\n');
      assert.equal(statuses.filter((s) => s === 503).length, 1, bodies);
      const failed = statuses.indexOf(503);
      assertV1Error(result[failed]!, 503, 'service_unavailable', 'the failed write');
      assert.ok(
        statuses.every((s, i) => i === failed || s === (i % 2 === 0 ? 201 : 200)),
        bodies,
      );
      assert.ok(attempts >= 4, 'the hook ran after each write');
      // On PostgreSQL the failed write's shared transaction ran the hook for it and then the others of its
      // batch again, alone: more runs than writes.
      if (!sqlite) assert.ok(attempts >= 5, `${attempts} runs of the hook`);
      // Each write's effect is there, except the failed one's, which was rolled back alone.
      const ok = (i: number) => i !== failed;
      assert.equal(await petStatus(ctx.app, key, p1), ok(0) ? 'pending' : 'available');
      assert.equal(
        (await request({ url: `/v1/store/orders/${placed}` })).json().status,
        ok(1) ? 'approved' : 'placed',
      );
      assert.equal(await petStatus(ctx.app, key, p2), ok(2) ? 'pending' : 'available');
      assert.equal(await petStatus(ctx.app, key, otherPet), ok(3) ? 'available' : 'pending');
      const expected = [
        ['order.placed', 'pet.updated'],
        ['order.approved'],
        ['order.placed', 'pet.updated'],
        ['order.cancelled', 'pet.updated'],
      ].flatMap((types, i) => (ok(i) ? types : []));
      assert.deepEqual(
        (await poller.poll()).map((e) => e.type).sort(),
        expected.sort(),
        'the events of the writes that committed, none of the failed one',
      );
    });

    test('no write of a turn is answered before it is committed', async () => {
      const other = otherConnection(ctx.database);
      try {
        const pets: number[] = [];
        for (let i = 0; i < 10; i++) pets.push(await availablePet(ctx.app, key));
        const checks: Promise<void>[] = [];
        // Each answer, the moment it arrives, is checked on the other connection.
        const answered = (res: LightMyRequestResponse, check: () => Promise<void>) => {
          checks.push(check());
          return res;
        };
        await Promise.all([
          ...pets.slice(0, 5).map((id) =>
            patch(id, `Committed ${id}`).then((res) =>
              answered(res, async () => {
                assert.equal(res.statusCode, 200, res.body);
                const row = await other.row<{ name: string }>('SELECT name FROM pets WHERE id = ?', id);
                assert.equal(row?.name, `Committed ${id}`, `pet ${id} answered before its commit`);
              }),
            ),
          ),
          ...pets.slice(5).map((petId) =>
            placeOrder(ctx.app, key, petId).then((res) =>
              answered(res, async () => {
                assert.equal(res.statusCode, 201, res.body);
                const { id } = res.json() as { id: number };
                const row = await other.row<{ status: string }>('SELECT status FROM orders WHERE id = ?', id);
                assert.equal(row?.status, 'placed', `order ${id} answered before its commit`);
              }),
            ),
          ),
        ]);
        await Promise.all(checks);
        assert.equal(checks.length, 10);
      } finally {
        other.close();
      }
    });
  });
}

/**
 * Two instances on one PostgreSQL database, each batching its turn's order writes: the pets and orders they
 * touch are locked in one order whatever the order of the writes, so writes crossing between the instances
 * (one placing for pets a then b, the other b then a; the same for actions) never deadlock.
 */
describe(
  'crossing order writes on two instances [postgres+redis]',
  { skip: !(await externalServicesAvailable()) },
  () => {
    let ctx: TestContext;
    let second: { app: FastifyInstance; database: PostgresDatabase; close(): Promise<void> };

    before(async () => {
      ctx = await createTestContext(postgresRedis, { config: { maxOpenOrders: 1000 } });
      assert.ok(ctx.database instanceof PostgresDatabase);
      const [{ schema }] = (await ctx.database.query<{ schema: string }>({
        text: 'SELECT current_schema() AS schema',
      })) as [{ schema: string }];
      // Not createTestPostgresDatabase: its close() drops the schema, which the first instance owns.
      const database = new PostgresDatabase(postgresUrl(schema), { poolSize: 10, timeoutMs: 5_000 });
      const counterStore = await createTestRedisStore({
        installationId: await ctx.database.installationId(),
      });
      const app = await buildApp({ config: defaultTestConfig, database, counterStore, clock: ctx.clock.fn });
      await app.ready();
      second = {
        app,
        database,
        async close() {
          await app.close();
          await counterStore.close();
          await database.close();
        },
      };
    });
    after(async () => {
      await second.close();
      await ctx.close();
    });

    test('placements and actions crossing between the instances: no deadlock, one winner each', async () => {
      const { key: one } = await ctx.createKey({ name: 'cross-one' });
      const { key: two } = await ctx.createKey({ name: 'cross-two' });
      const watches = [watchTransactions(ctx.database), watchTransactions(second.database)];
      try {
        for (let round = 0; round < 10; round++) {
          const [a, b] = [await availablePet(ctx.app, one), await availablePet(ctx.app, one)];
          const placed = await Promise.all([
            placeOrder(ctx.app, one, a),
            placeOrder(ctx.app, one, b),
            placeOrder(second.app, two, b),
            placeOrder(second.app, two, a),
          ]);
          const bodies = placed.map((r) => r.body).join('\n');
          assert.deepEqual([placed[0]!.statusCode, placed[3]!.statusCode].sort(), [201, 409], bodies);
          assert.deepEqual([placed[1]!.statusCode, placed[2]!.statusCode].sort(), [201, 409], bodies);
          const orderOf = (i: number, j: number) =>
            (placed[placed[i]!.statusCode === 201 ? i : j]!.json() as { id: number }).id;
          const [oa, ob] = [orderOf(0, 3), orderOf(1, 2)];
          // Keys with every scope may act on any account's order: the two instances cancel both orders, in
          // opposite orders; each order is cancelled exactly once.
          const acted = await Promise.all([
            act(ctx.app, one, oa, 'cancel'),
            act(ctx.app, one, ob, 'cancel'),
            act(second.app, two, ob, 'cancel'),
            act(second.app, two, oa, 'cancel'),
          ]);
          const actedBodies = acted.map((r) => r.body).join('\n');
          assert.deepEqual([acted[0]!.statusCode, acted[3]!.statusCode].sort(), [200, 409], actedBodies);
          assert.deepEqual([acted[1]!.statusCode, acted[2]!.statusCode].sort(), [200, 409], actedBodies);
          assert.equal(await petStatus(ctx.app, one, a), 'available');
          assert.equal(await petStatus(second.app, two, b), 'available');
        }
        for (const watch of watches)
          assert.deepEqual(watch.failed, [], 'no transaction failed (no deadlock)');
      } finally {
        for (const watch of watches) watch.restore();
      }
    });
  },
);
