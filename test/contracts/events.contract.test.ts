/**
 * The events repository's contract (src/modules/events/repository.ts) on every backend: an appended event
 * commits or rolls back with its transaction, the feed filters by seq, type and viewer, and purge removes
 * what is older than the cutoff, dispatched or not.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PostgresDatabase } from '../../src/db/postgres.js';
import { SqliteDatabase } from '../../src/db/sqlite.js';
import type { Database } from '../../src/db/database.js';
import { buildEvent, eventRepository, type NewEvent } from '../../src/modules/events/index.js';
import { contractSuite, DAY, T0 } from '../support/contract.js';
import { appendEvent } from '../support/events.js';

/** Appends `event` in a transaction that then fails: nothing may remain. */
async function appendThenFail(database: Database, event: NewEvent): Promise<void> {
  const failure = new Error('after the append');
  if (database instanceof SqliteDatabase) {
    const events = database.repository(eventRepository);
    assert.throws(
      () =>
        database.db
          .transaction(() => {
            events.append(event);
            throw failure;
          })
          .immediate(),
      failure,
    );
  } else if (database instanceof PostgresDatabase) {
    const events = database.repository(eventRepository);
    await assert.rejects(
      database.transaction(async (client) => {
        await events.append(client, event);
        throw failure;
      }),
      failure,
    );
  } else assert.fail('unknown database');
}

const ALL = { accountId: 0, allOrders: true };

contractSuite('events', (target) => {
  test('an append commits with its transaction and rolls back with it; the feed is in seq order', async () => {
    const database = await target.fresh();
    const events = database.repository(eventRepository);
    const first = buildEvent('pet.created', { object: { id: 1 }, version: 1 }, T0);
    await appendEvent(database, first);
    await appendThenFail(database, buildEvent('pet.updated', { object: { id: 1 }, version: 2 }, T0));
    const second = buildEvent('pet.deleted', { object: { id: 1 }, version: 1 }, T0);
    await appendEvent(database, second);
    const rows = await events.list({ limit: 10, viewer: ALL });
    assert.deepEqual(
      rows.map((r) => r.payload),
      [first.payload, second.payload],
    );
    assert.ok(rows[0]!.seq < rows[1]!.seq);
    assert.deepEqual(
      (await events.list({ afterSeq: rows[0]!.seq, limit: 10, viewer: ALL })).map((r) => r.payload),
      [second.payload],
    );
    assert.deepEqual(
      (await events.list({ limit: 1, type: 'pet.deleted', viewer: ALL })).map((r) => r.payload),
      [second.payload],
    );
  });

  test('visibility: order events of another account are hidden unless the viewer sees all orders', async () => {
    const database = await target.fresh();
    const events = database.repository(eventRepository);
    const mine = buildEvent('order.placed', { object: { id: 1 }, version: 1 }, T0, 7);
    const theirs = buildEvent('order.cancelled', { object: { id: 2 }, version: 2 }, T0, 8);
    const pet = buildEvent('pet.updated', { object: { id: 3 }, version: 2 }, T0);
    for (const event of [mine, theirs, pet]) await appendEvent(database, event);
    const ids = async (viewer: { accountId: number; allOrders: boolean }) =>
      (await events.list({ limit: 10, viewer })).map((r) => (JSON.parse(r.payload) as { id: string }).id);
    assert.deepEqual(await ids({ accountId: 7, allOrders: false }), [mine.id, pet.id]);
    assert.deepEqual(await ids({ accountId: 9, allOrders: false }), [pet.id]);
    assert.deepEqual(await ids({ accountId: 9, allOrders: true }), [mine.id, theirs.id, pet.id]);
  });

  test('purge removes events created before the cutoff, dispatched or not, and keeps the rest', async () => {
    const database = await target.fresh();
    const events = database.repository(eventRepository);
    const old = buildEvent('pet.created', { object: { id: 1 }, version: 1 }, T0 - 31 * DAY);
    const edge = buildEvent('pet.updated', { object: { id: 1 }, version: 2 }, T0 - 30 * DAY);
    const recent = buildEvent('pet.updated', { object: { id: 1 }, version: 3 }, T0 - DAY);
    for (const event of [old, edge, recent]) await appendEvent(database, event);
    assert.equal(await events.purge(T0 - 30 * DAY), 1);
    assert.deepEqual(
      (await events.list({ limit: 10, viewer: ALL })).map((r) => r.payload),
      [edge.payload, recent.payload],
    );
    assert.equal(await events.purge(T0), 2);
    assert.deepEqual(await events.list({ limit: 10, viewer: ALL }), []);
  });
});
