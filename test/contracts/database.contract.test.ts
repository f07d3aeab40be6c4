/**
 * The Database lifecycle contract (src/db/database.ts, src/db/migrations.ts) on every backend: migrations,
 * the installation id, refusing a newer schema, ping. Then the PostgreSQL-only guarantees the contract leaves
 * to the implementation: outages and timeouts, the pool, schema isolation, the bigint parser.
 */
import assert from 'node:assert/strict';
import { before, test, describe } from 'node:test';
import pg from 'pg';
import { type Database, StorageUnavailableError } from '../../src/db/database.js';
import { migrationsFor } from '../../src/db/migrations.js';
import { PostgresDatabase } from '../../src/db/postgres.js';
import { SqliteDatabase } from '../../src/db/sqlite.js';
import { idempotencyRepository } from '../../src/db/idempotency/repository.js';
import { accountRepository } from '../../src/modules/accounts/repository.js';
import { categoryRepository, DEFAULT_CATEGORIES } from '../../src/modules/categories/repository.js';
import { petRepository } from '../../src/modules/pets/repository.js';
import { uniqueName } from '../helpers.js';
import { contractSuite, postgresSuite, rejectsUnavailable, settleIo, T0 } from '../support/contract.js';
import { withPostgresClient } from '../../support/postgres.js';
import { createdPet, idem } from '../support/pets.js';
import { TcpProxy } from '../../support/tcp-proxy.js';

contractSuite('database', (target) => {
  let storage: Database;
  before(async () => {
    storage = await target.fresh();
  });

  describe('migrations', () => {
    test('a new database reports fresh; migrating again changes nothing', async () => {
      const s = await target.create();
      assert.deepEqual(await s.migrate(), { fresh: true });
      const pet = createdPet(
        await s.repository(petRepository).create({ name: 'Keep me', categoryId: 1, status: 'available' }),
      );
      const again = await s.migrate();
      // PostgreSQL answers for this call; SQLite migrates when opened and reports what it found then.
      if (target.name === 'postgres') assert.equal(again.fresh, false);
      assert.deepEqual(await s.repository(categoryRepository).list(), DEFAULT_CATEGORIES);
      assert.deepEqual(await s.repository(petRepository).list({ limit: 100 }), [pet]);
    });

    test('two instances migrating a new database at once: exactly one reports fresh, both work', async () => {
      const { a, b, close } = await target.createPair();
      try {
        const results = await Promise.all([a.migrate(), b.migrate()]);
        assert.equal(results.filter((r) => r.fresh).length, 1, JSON.stringify(results));
        assert.deepEqual(await a.repository(categoryRepository).list(), DEFAULT_CATEGORIES);
        assert.deepEqual(await b.repository(categoryRepository).list(), DEFAULT_CATEGORIES);
        const pet = createdPet(
          await a.repository(petRepository).create({ name: 'Shared', categoryId: 2, status: 'pending' }),
        );
        assert.deepEqual(await b.repository(petRepository).get(pet.id), { pet, version: 1 });
        // Whichever instance won, migrating again from the other is not fresh.
        const loser = results[0]!.fresh ? b : a;
        assert.equal((await loser.migrate()).fresh, false);
      } finally {
        await close();
      }
    });

    test('a database migrated by a newer release is refused, not misread', async () => {
      const { a, b, close } = await target.createPair();
      try {
        await a.migrate();
        const newer = migrationsFor(target.name).length + 1;
        if (a instanceof SqliteDatabase) {
          a.db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)').run(newer, T0);
        } else {
          await (a as PostgresDatabase).execute({
            text: 'INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)',
            values: [newer, T0],
          });
        }
        await assert.rejects(b.migrate(), new RegExp(`schema version ${newer} is newer than this release`));
      } finally {
        await close();
      }
    });

    test('the installation id: written once when instances migrate at once, the same on reopen, its own per database', async () => {
      const { a, b, reopen, close } = await target.createPair();
      try {
        await Promise.all([a.migrate(), b.migrate()]);
        const id = await a.installationId();
        assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
        assert.equal(await b.installationId(), id);
        await b.migrate();
        const again = reopen();
        try {
          await again.migrate();
          assert.equal(await again.installationId(), id);
        } finally {
          await again.close();
        }
        assert.notEqual(await storage.installationId(), id, 'another database has its own id');
      } finally {
        await close();
      }
    });

    test('default categories are seeded in id order', async () => {
      assert.deepEqual(await storage.repository(categoryRepository).list(), DEFAULT_CATEGORIES);
    });
  });

  test('ping resolves', async () => {
    await storage.ping();
  });
});

postgresSuite('database', ({ open }) => {
  test('an unreachable server rejects every call with StorageUnavailableError, without waiting for a timeout', async (t) => {
    const storage = new PostgresDatabase('postgres://postgres@127.0.0.1:1/test?schema=nowhere', {
      poolSize: 2,
      timeoutMs: 1000,
    });
    // The clock stands still: every rejection must come from the refused connection itself.
    t.mock.timers.enable({ apis: ['setTimeout'] });
    try {
      const calls: [string, () => Promise<unknown>][] = [
        ['migrate', () => storage.migrate()],
        ['ping', () => storage.ping()],
        ['listPets', () => storage.repository(petRepository).list({ limit: 10 })],
        ['listPets/status', () => storage.repository(petRepository).list({ status: 'sold', limit: 10 })],
        ['getPet', () => storage.repository(petRepository).get(1)],
        [
          'createPet',
          () => storage.repository(petRepository).create({ name: 'x', categoryId: 1, status: 'sold' }),
        ],
        [
          'createPet/idem',
          () =>
            storage
              .repository(petRepository)
              .create({ name: 'x', categoryId: 1, status: 'sold' }, idem(1, 'k', 'f', T0)),
        ],
        ['seedPets', () => storage.repository(petRepository).seed(10, T0)],
        ['upsertAccount', () => storage.repository(accountRepository).upsertAccount({ name: 'a' }, T0)],
        ['findKeyByHash', () => storage.repository(accountRepository).findKeyByHash('h')],
        ['listKeys', () => storage.repository(accountRepository).listKeys()],
        ['purgeIdempotency', () => storage.repository(idempotencyRepository).purge(T0)],
      ];
      await Promise.all(calls.map(([label, call]) => rejectsUnavailable(call(), label)));
    } finally {
      t.mock.timers.reset();
      await storage.close();
    }
  });

  test('a server that accepts connections but never answers times out within the configured bound', async (t) => {
    // Accepts and never answers: a hung server or a black-holed network.
    const silent = await new TcpProxy({ host: '127.0.0.1', port: 1 }, 'silent').start();
    silent.blackhole();
    const storage = new PostgresDatabase(`postgres://postgres@127.0.0.1:${silent.port}/test`, {
      poolSize: 1,
      timeoutMs: 300,
    });
    t.mock.timers.enable({ apis: ['setTimeout'] });
    try {
      const calls = Promise.all([
        rejectsUnavailable(storage.ping(), 'ping'),
        // Queued behind the first for the single connection slot: bounded as well.
        rejectsUnavailable(
          storage
            .repository(petRepository)
            .create({ name: 'x', categoryId: 1, status: 'sold' }, idem(1, 'k', 'f', T0)),
          'createPet',
        ),
        rejectsUnavailable(storage.migrate(), 'migrate'),
      ]);
      await settleIo();
      // Settled once the configured 300 ms have passed on the clock, and not for any other reason.
      t.mock.timers.tick(300);
      await calls;
    } finally {
      t.mock.timers.reset();
      await storage.close();
      silent.close();
    }
  });

  test('slow queries and an exhausted pool answer StorageUnavailableError within the timeout', async (t) => {
    const schema = uniqueName('pg');
    const owner = await open({ schema });
    await owner.migrate();
    const slow = await open({ schema, poolSize: 1, timeoutMs: 500, dropOnClose: false });
    await withPostgresClient(async (client) => {
      // Hold a lock every read of pets must wait for, standing in for a database that stopped answering.
      await client.query('BEGIN');
      await client.query(`LOCK TABLE "${schema}".pets IN ACCESS EXCLUSIVE MODE`);
      t.mock.timers.enable({ apis: ['setTimeout'] });
      try {
        // The first occupies the only connection until the timeout; the second waits for a connection.
        const calls = Promise.all([
          rejectsUnavailable(slow.repository(petRepository).list({ limit: 5 }), 'slow query'),
          rejectsUnavailable(slow.repository(petRepository).get(1), 'pool exhausted'),
        ]);
        await settleIo();
        // Both are answered once the 500 ms budget has passed on the clock (the server's own
        // statement_timeout, on real time, may answer the first earlier: that is within it too).
        t.mock.timers.tick(500);
        await calls;
      } finally {
        t.mock.timers.reset();
        await client.query('ROLLBACK');
      }
    });
    // The storage recovers as soon as the database does.
    assert.deepEqual(await slow.repository(petRepository).list({ limit: 5 }), []);
  });

  test('connections killed by the server do not crash the process; the pool reconnects', async () => {
    const appName = uniqueName('app');
    const storage = await open({ params: { application_name: appName } });
    await storage.migrate();
    // Open several pooled connections, then have the server terminate them while they sit idle.
    await Promise.all(Array.from({ length: 5 }, () => storage.repository(petRepository).list({ limit: 1 })));
    const killed = await withPostgresClient(async (client) => {
      const result = await client.query<{ ok: boolean }>(
        'SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = $1',
        [appName],
      );
      return result.rowCount ?? 0;
    });
    assert.ok(killed > 0, 'expected pooled sessions to terminate');
    // A connection may be handed out before its termination notice has arrived: that call may fail, as
    // unavailable and never otherwise, and the connection is discarded. So at most one call per killed
    // connection fails before one succeeds.
    let failures = 0;
    for (;;) {
      try {
        await storage.ping();
        break;
      } catch (error) {
        assert.ok(error instanceof StorageUnavailableError, String(error));
        assert.ok(++failures <= killed, `${failures} failures for ${killed} killed connections`);
      }
    }
    await storage.ping();
    assert.deepEqual(await storage.repository(petRepository).list({ limit: 1 }), []);
  });

  test('schemas isolate data: two storages on one database do not see each other', async () => {
    const a = await open();
    const b = await open();
    await Promise.all([a.migrate(), b.migrate()]);
    const pet = createdPet(
      await a.repository(petRepository).create({ name: 'Only in A', categoryId: 1, status: 'available' }),
    );
    assert.deepEqual(await a.repository(petRepository).list({ limit: 10 }), [pet]);
    assert.deepEqual(await b.repository(petRepository).list({ limit: 10 }), []);
  });

  test('a bad schema name in the URL is refused before connecting', () => {
    for (const bad of ['Upper', 'semi;colon', 'has-dash', '1digit', 'x'.repeat(64), '']) {
      assert.throws(
        () =>
          new PostgresDatabase(`postgres://postgres@127.0.0.1:5432/test?schema=${encodeURIComponent(bad)}`, {
            poolSize: 1,
            timeoutMs: 100,
          }),
        /invalid schema/,
        bad,
      );
    }
  });

  test("bigint ids are parsed to numbers per pool, leaving pg's global parser alone", async () => {
    const storage = await open();
    await storage.migrate();
    assert.equal(await storage.repository(accountRepository).countAccounts(), 0);
    assert.equal(typeof (await storage.repository(accountRepository).countAccounts()), 'number');
    const parse = pg.types.getTypeParser(20) as (value: string) => unknown;
    assert.equal(parse('42'), '42');
  });
});
