/**
 * The events repository's contract (src/modules/events/repository.ts) on every backend: an appended event
 * commits or rolls back with its transaction, the feed filters by seq, type and viewer, the webhooks' fan-out
 * takes undispatched events oldest first and marks them done, and purge removes what is older than the
 * cutoff, dispatched or not. On PostgreSQL, where writers take no lock for the feed
 * and a publisher numbers committed events afterwards: an event committed after a later one was read is on
 * the next page, events of one pet are in version order, a publisher killed mid-pass loses and repeats
 * nothing, and a long open transaction neither loses its event nor holds the feed back.
 */
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { test } from 'node:test';
import type { PoolClient } from 'pg';
import { migrationsFor } from '../../src/db/migrations.js';
import { PostgresDatabase } from '../../src/db/postgres.js';
import { SqliteDatabase } from '../../src/db/sqlite.js';
import type { Database } from '../../src/db/database.js';
import {
  buildEvent,
  eventRepository,
  type NewEvent,
  type UndispatchedEvent,
} from '../../src/modules/events/index.js';
import { accountRepository } from '../../src/modules/accounts/repository.js';
import { orderRepository } from '../../src/modules/orders/repository.js';
import { petRepository } from '../../src/modules/pets/repository.js';
import { webhookRepository } from '../../src/modules/webhooks/repository.js';
import { uniqueName } from '../helpers.js';
import { contractSuite, DAY, postgresSuite, T0 } from '../support/contract.js';
import { appendEvent } from '../support/events.js';
import { createdPet } from '../support/pets.js';
import { withPostgresClient } from '../../support/postgres.js';

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

/** The events module's dispatch interface (what the webhooks' fan-out uses), inside one transaction. */
interface Dispatch {
  take(limit: number): Promise<UndispatchedEvent[]>;
  mark(seqs: number[]): Promise<void>;
}

function dispatch<T>(database: Database, work: (d: Dispatch) => Promise<T>): Promise<T> {
  if (database instanceof SqliteDatabase) {
    const events = database.repository(eventRepository);
    // Synchronous on the one connection: here each statement commits on its own.
    return work({
      take: (limit) => Promise.resolve(events.undispatched(limit)),
      mark: (seqs) => Promise.resolve(seqs.forEach((seq) => events.markDispatched(seq))),
    });
  }
  if (database instanceof PostgresDatabase) {
    const events = database.repository(eventRepository);
    return database.transaction((client) =>
      work({
        take: (limit) => events.undispatched(client, limit),
        mark: (seqs) => events.markDispatched(client, seqs),
      }),
    );
  }
  return assert.fail('unknown database');
}

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

  test("the fan-out's dispatch: undispatched events oldest first, at most the limit; marked ones are done", async () => {
    const database = await target.fresh();
    const account = await database.repository(accountRepository).upsertAccount({ name: uniqueName('d') }, T0);
    // Events appended while no endpoint is enabled are written already dispatched (nobody waits for them).
    const unwatched = buildEvent('pet.created', { object: { id: 1 }, version: 1 }, T0);
    await appendEvent(database, unwatched);
    const endpoint = {
      url: 'https://hooks.example/d',
      events: ['*'],
      secret: 'whsec_d',
      ordersManage: false,
      grantedScopes: [],
    };
    await database.repository(webhookRepository).createEndpoint(account.id, endpoint, T0, 16);
    const watched = [1, 2, 3].map((v) =>
      buildEvent('pet.updated', { object: { id: 1 }, version: v + 1 }, T0),
    );
    for (const event of watched) await appendEvent(database, event);
    await database.repository(eventRepository).publish();
    const ids = (taken: { id: string }[]) => taken.map((e) => e.id);
    const first = await dispatch(database, (d) => d.take(2));
    assert.deepEqual(ids(first), [watched[0]!.id, watched[1]!.id]);
    assert.deepEqual(
      first.map((e) => [e.type, e.accountId]),
      [
        ['pet.updated', null],
        ['pet.updated', null],
      ],
    );
    await dispatch(database, (d) => d.mark(first.map((e) => e.seq)));
    assert.deepEqual(ids(await dispatch(database, (d) => d.take(10))), [watched[2]!.id]);
    await dispatch(database, async (d) => d.mark((await d.take(10)).map((e) => e.seq)));
    assert.deepEqual(await dispatch(database, (d) => d.take(10)), []);
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

interface Parsed {
  seq: number;
  id: string;
  type: string;
  data: { object: { id?: number }; version: number };
}

/** Every event after `after`, following the cursor page by page as a polling client does. */
async function readAll(database: Database, after?: number, limit = 3): Promise<Parsed[]> {
  const events = database.repository(eventRepository);
  const seen: Parsed[] = [];
  let cursor = after;
  for (;;) {
    const page = await events.list({ afterSeq: cursor, limit, viewer: ALL });
    seen.push(...page.map((row) => ({ seq: row.seq, ...(JSON.parse(row.payload) as Omit<Parsed, 'seq'>) })));
    if (page.length < limit) return seen;
    cursor = page.at(-1)!.seq;
  }
}

/** A transaction left open after `work` until commit() is called: a slow writer. */
function openTransaction(database: PostgresDatabase, work: (client: PoolClient) => Promise<void>) {
  let ready!: () => void;
  let release!: () => void;
  const started = new Promise<void>((resolve) => (ready = resolve));
  const gate = new Promise<void>((resolve) => (release = resolve));
  const done = database.transaction(async (client) => {
    await work(client);
    ready();
    await gate;
  });
  return {
    started: Promise.race([started, done]),
    commit: async () => {
      release();
      await done;
    },
  };
}

postgresSuite("events feed without a writers' lock", ({ open }) => {
  async function fresh(options: Parameters<typeof open>[0] = {}): Promise<PostgresDatabase> {
    const database = (await open(options)) as PostgresDatabase;
    await database.migrate();
    return database;
  }
  const append = (database: PostgresDatabase, client: PoolClient, event: NewEvent) =>
    database.repository(eventRepository).append(client, event);

  test('an event committed after a later one was read is on the next page, not under the cursor', async () => {
    const database = await fresh();
    const early = buildEvent('pet.updated', { object: { id: 1 }, version: 2 }, T0);
    const late = buildEvent('pet.updated', { object: { id: 2 }, version: 2 }, T0 + 1);
    // The early event is inserted first (the smaller seq) and commits last.
    const slow = openTransaction(database, (client) => append(database, client, early));
    await slow.started;
    await appendEvent(database, late);
    const first = await readAll(database);
    assert.deepEqual(
      first.map((e) => e.id),
      [late.id],
    );
    await slow.commit();
    const next = await readAll(database, first.at(-1)!.seq);
    assert.deepEqual(
      next.map((e) => e.id),
      [early.id],
    );
    assert.deepEqual(
      (await readAll(database)).map((e) => e.id),
      [late.id, early.id],
    );
  });

  test('a placeOrder racing PATCHes of the same pet: its events are in version order', async () => {
    const database = await fresh();
    const pets = database.repository(petRepository);
    const orders = database.repository(orderRepository);
    const account = await database.repository(accountRepository).upsertAccount({ name: 'racer' }, T0);
    const ids: number[] = [];
    for (let i = 0; i < 6; i++) {
      ids.push(createdPet(await pets.create({ name: 'Racer', categoryId: 1, status: 'available' })).id);
    }
    // Readers poll while the writers race, so passes number the events a few at a time.
    let racing = true;
    const polled: Parsed[] = [];
    const poller = (async () => {
      while (racing) {
        polled.push(...(await readAll(database, polled.at(-1)?.seq)));
        await nextTurn();
      }
    })();
    await Promise.all(
      ids.flatMap((id) => [
        pets.update(id, { name: 'First' }, undefined, undefined, T0),
        orders.place({ accountId: account.id, petId: id, maxOpen: 100, now: T0 }),
        pets.update(id, { name: 'Second' }, undefined, undefined, T0),
        pets.update(id, { name: 'Third' }, undefined, undefined, T0),
      ]),
    );
    racing = false;
    await poller;
    polled.push(...(await readAll(database, polled.at(-1)?.seq)));
    assert.deepEqual(
      polled.map((e) => e.seq),
      [...new Set(polled.map((e) => e.seq))].sort((a, b) => a - b),
      'each event once, in feed order',
    );
    for (const id of ids) {
      const versions = polled
        .filter((e) => e.type.startsWith('pet.') && e.data.object.id === id)
        .map((e) => e.data.version);
      // Created at 1, then the three renames and the hold in whatever order they won the row lock.
      assert.deepEqual(versions, [1, 2, 3, 4, 5], `pet ${id}: ${versions.join(',')}`);
    }
  });

  test('a publisher killed mid-pass loses and repeats nothing', async () => {
    const application = uniqueName('publisher');
    const database = await fresh({ params: { application_name: application } });
    const events = database.repository(eventRepository);
    const written = [1, 2, 3].map((i) => buildEvent('pet.updated', { object: { id: i }, version: 2 }, T0));
    for (const event of written) await appendEvent(database, event);
    // The pass stalls on a lock the test holds, after numbering the events and before recording the last
    // position, and is killed there.
    const key = randomInt(2 ** 47);
    await withPostgresClient(async (holder) => {
      await holder.query('SELECT pg_advisory_lock($1)', [key]);
      await withPostgresClient(async (client) => {
        const schema = (await database.query<{ s: string }>({ text: 'SELECT current_schema() AS s' }))[0]!.s;
        await client.query(`SET search_path = "${schema}"`);
        await client.query(`CREATE FUNCTION stall() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN PERFORM pg_advisory_xact_lock(${key}); RETURN NEW; END $$`);
        await client.query(
          'CREATE TRIGGER stall BEFORE UPDATE ON events_feed FOR EACH ROW EXECUTE FUNCTION stall()',
        );
        const pass = events.publish();
        pass.catch(() => {});
        let killed = false;
        while (!killed) {
          const { rows } = await client.query<{ pid: number }>(
            `SELECT pid FROM pg_stat_activity
             WHERE application_name = $1 AND wait_event_type = 'Lock' AND query LIKE '%publish_events%'`,
            [application],
          );
          for (const { pid } of rows) {
            await client.query('SELECT pg_terminate_backend($1)', [pid]);
            killed = true;
          }
          if (!killed) await nextTurn();
        }
        await assert.rejects(pass);
        const { rows } = await client.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM events WHERE position IS NOT NULL',
        );
        assert.equal(rows[0]!.n, 0, 'the killed pass numbered nothing');
        await client.query('DROP TRIGGER stall ON events_feed');
      });
    });
    const after = written.map((e) => e.id);
    const feed = await readAll(database);
    assert.deepEqual(
      feed.map((e) => e.id),
      after,
    );
    assert.equal(await events.publish(), 0, 'nothing left to number');
    assert.deepEqual(
      (await readAll(database)).map((e) => e.id),
      after,
    );
  });

  test('cursors handed out before the upgrade stay valid after it', async () => {
    const schema = uniqueName('pg');
    const database = (await open({ schema })) as PostgresDatabase;
    // The schema as the release before the feed's positions left it, with three events.
    const all = migrationsFor('postgres');
    const feed = all.find((m) => m.name === 'events_feed_position')!;
    const before = all.filter((m) => m.version < feed.version);
    const old = [1, 2, 3].map((i) => buildEvent('pet.updated', { object: { id: i }, version: 2 }, T0));
    await withPostgresClient(async (client) => {
      await client.query(`CREATE SCHEMA "${schema}"`);
      await client.query(`SET search_path = "${schema}"`);
      await client.query(
        'CREATE TABLE schema_migrations (version integer PRIMARY KEY, applied_at bigint NOT NULL)',
      );
      for (const migration of before) {
        await client.query(migration.sql);
        await client.query('INSERT INTO schema_migrations VALUES ($1, 0)', [migration.version]);
      }
      await client.query("INSERT INTO installation VALUES (1, 'old', 0)");
      for (const e of old) {
        await client.query(
          'INSERT INTO events (id, type, account_id, payload, created_at) VALUES ($1, $2, $3, $4, $5)',
          [e.id, e.type, e.accountId, e.payload, e.createdAt],
        );
      }
    });
    const { rows: seqs } = await withPostgresClient((client) =>
      client.query<{ seq: number }>(`SELECT seq::int FROM "${schema}".events ORDER BY seq`),
    );
    await database.migrate();
    const added = buildEvent('pet.deleted', { object: { id: 1 }, version: 2 }, T0);
    await appendEvent(database, added);
    // A client that had read the first old event goes on with the second, then what came after.
    assert.deepEqual(
      (await readAll(database, seqs[0]!.seq)).map((e) => e.id),
      [old[1]!.id, old[2]!.id, added.id],
    );
    assert.deepEqual(
      (await readAll(database, seqs[2]!.seq)).map((e) => e.id),
      [added.id],
    );
  });

  test('a long open transaction neither loses its event nor holds the feed back', async () => {
    const database = await fresh();
    const long = buildEvent('pet.deleted', { object: { id: 99 }, version: 3 }, T0);
    const slow = openTransaction(database, (client) => append(database, client, long));
    await slow.started;
    // Another instance on the same schema writes and reads meanwhile.
    const other = await fresh({
      schema: (await database.query<{ s: string }>({ text: 'SELECT current_schema() AS s' }))[0]!.s,
      dropOnClose: false,
    });
    const seen: Parsed[] = [];
    for (let round = 0; round < 3; round++) {
      const batch = [1, 2].map((i) =>
        buildEvent('pet.updated', { object: { id: round * 2 + i }, version: 2 }, T0 + round),
      );
      for (const event of batch) await appendEvent(other, event);
      const page = await readAll(other, seen.at(-1)?.seq);
      assert.deepEqual(
        page.map((e) => e.id),
        batch.map((e) => e.id),
        `round ${round}: the feed moves on while the long transaction is open`,
      );
      seen.push(...page);
    }
    await slow.commit();
    const last = await readAll(database, seen.at(-1)!.seq);
    assert.deepEqual(
      last.map((e) => e.id),
      [long.id],
    );
  });
});
