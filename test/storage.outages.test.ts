/**
 * The database misbehaving underneath the service, produced where it really happens: another SQLite
 * connection holding the write lock, SQLite aborting a transaction mid-batch, and a PostgreSQL network
 * that goes silent (a TCP proxy that stops forwarding). Deadlines are checked on a mocked clock (node:test
 * mock timers), so "within DB_TIMEOUT_MS" is exact and independent of machine load.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { MemoryCounterStore } from '../src/ratelimit/memory.js';
import { StorageUnavailableError, type Database as AppDatabase } from '../src/db/database.js';
import { PostgresDatabase, StorageTimeoutError } from '../src/db/postgres.js';
import { SqliteDatabase } from '../src/db/sqlite.js';
import { accountRepository } from '../src/modules/accounts/repository.js';
import { petRepository } from '../src/modules/pets/repository.js';
import type { SqlitePetRepository } from '../src/modules/pets/repository.sqlite.js';
import {
  bearer,
  countPets,
  createTestContext,
  externalServicesAvailable,
  PG_URL,
  uniqueName,
  type Backend,
  type TestContext,
} from './helpers.js';
import { dropSchema, postgresUrl } from '../support/postgres.js';
import { settleIo } from './support/contract.js';
import { TcpProxy } from '../support/tcp-proxy.js';

const PET = { name: 'Rex', categoryId: 1, status: 'available' as const };

function assertUnavailable(error: unknown, label: string): true {
  assert.ok(
    error instanceof StorageUnavailableError,
    `${label}: expected StorageUnavailableError, got ${error}`,
  );
  return true;
}

/** A SQLite database file, an app over it, and a second connection to it standing in for another process. */
async function sqliteWithSecondWriter(timeoutMs: number): Promise<{
  ctx: TestContext;
  storage: SqliteDatabase;
  other: Database.Database;
  close(): Promise<void>;
}> {
  const dir = mkdtempSync(join(tmpdir(), 'pet-adoption-writer-'));
  const path = join(dir, 'test.db');
  const storage = new SqliteDatabase(path, { timeoutMs });
  const backend: Backend = {
    name: 'sqlite-file',
    createDatabase: async () => storage,
    createCounterStore: async () => new MemoryCounterStore(),
  };
  const ctx = await createTestContext(backend, { config: { unauthenticatedPerMinute: 100_000 } });
  const other = new Database(path);
  return {
    ctx,
    storage,
    other,
    async close() {
      if (other.inTransaction) other.exec('ROLLBACK');
      other.close();
      await ctx.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Resolves at the first time the storage finds the write lock taken and schedules another attempt. */
function nextBusy(storage: SqliteDatabase): Promise<void> {
  return new Promise((resolve) => {
    storage.hooks.onBusy = () => {
      delete storage.hooks.onBusy;
      resolve();
    };
  });
}

describe('sqlite: a second writer holds the write lock', () => {
  test('POSTs made meanwhile wait for it, off the event loop, and all succeed once it is released', async () => {
    // The bound is far away: only the release of the lock can end the wait.
    const env = await sqliteWithSecondWriter(60_000);
    try {
      const { key } = await env.ctx.createKey();
      const before = await countPets(env.storage);
      env.other.exec('BEGIN IMMEDIATE'); // what a CLI `keys revoke` or `seed` holds while it writes
      const busy = nextBusy(env.storage);
      const posts = Array.from({ length: 5 }, (_, i) =>
        env.ctx.app.inject({
          method: 'POST',
          url: '/v1/pets',
          headers: bearer(key),
          payload: { name: `during lock ${i}`, categoryId: 1 },
        }),
      );
      let answered = false;
      void Promise.all(posts).then(() => (answered = true));
      await busy;
      // The event loop is free while the batch waits: other requests are answered.
      assert.equal((await env.ctx.app.inject({ url: '/healthz' })).statusCode, 200);
      assert.equal(answered, false, 'the POSTs wait for the lock');
      env.other.exec('COMMIT');
      const results = await Promise.all(posts);
      for (const res of results) assert.equal(res.statusCode, 201, res.body);
      for (const res of results) {
        const got = await env.ctx.app.inject({ url: `/v1/pets/${res.json().id}`, headers: bearer(key) });
        assert.equal(got.statusCode, 200);
      }
      assert.equal(await countPets(env.storage), before + 5);
    } finally {
      await env.close();
    }
  });

  test('held past the bound (DB_TIMEOUT_MS): 503 service_unavailable with Retry-After, nothing written', async () => {
    const env = await sqliteWithSecondWriter(50);
    try {
      const { key } = await env.ctx.createKey();
      const before = await countPets(env.storage);
      env.other.exec('BEGIN IMMEDIATE');
      let retried = 0;
      env.storage.hooks.onBusy = () => retried++;
      const results = await Promise.all(
        Array.from({ length: 3 }, (_, i) =>
          env.ctx.app.inject({
            method: 'POST',
            url: '/v1/pets',
            headers: { ...bearer(key), 'idempotency-key': `held-${i}` },
            payload: { name: `held ${i}`, categoryId: 1 },
          }),
        ),
      );
      for (const res of results) {
        assert.equal(res.statusCode, 503, res.body);
        assert.equal(res.json().code, 'service_unavailable');
        assert.match(String(res.headers['retry-after']), /^[1-9]\d*$/);
      }
      assert.ok(retried > 0, 'the batch was retried before giving up');
      env.other.exec('COMMIT');
      assert.equal(await countPets(env.storage), before);
      // Nothing half-written: the idempotency records are absent too, so the same keys now create.
      const retry = await env.ctx.app.inject({
        method: 'POST',
        url: '/v1/pets',
        headers: { ...bearer(key), 'idempotency-key': 'held-0' },
        payload: { name: 'held 0', categoryId: 1 },
      });
      assert.equal(retry.statusCode, 201);
      assert.equal(retry.headers['idempotent-replayed'], undefined);
    } finally {
      await env.close();
    }
  });

  test('SQLite aborting the transaction mid-batch fails every caller of the batch; nothing is written', async () => {
    const env = await sqliteWithSecondWriter(1_000);
    try {
      const { storage } = env;
      const pets = storage.repository(petRepository) as SqlitePetRepository;
      const before = await countPets(storage);
      let inserted = 0;
      // After the second real insert, the outer transaction is rolled back under the batch, as SQLite
      // itself does on an I/O error or a full disk.
      pets.hooks.afterInsert = (db) => {
        if (++inserted === 2) db.exec('ROLLBACK');
      };
      // Made in one turn: one batch.
      const calls = Array.from({ length: 5 }, (_, i) => pets.create({ ...PET, name: `batch ${i}` }));
      const settled = await Promise.allSettled(calls);
      delete pets.hooks.afterInsert;
      assert.equal(inserted, 2, 'the creations after the abort were not attempted');
      for (const [i, outcome] of settled.entries()) {
        assert.equal(outcome.status, 'rejected', `caller ${i}: ${JSON.stringify(outcome)}`);
        assertUnavailable((outcome as PromiseRejectedResult).reason, `caller ${i}`);
      }
      assert.equal(await countPets(storage), before, 'no creation of the batch survived');
      // The connection is usable again.
      assert.equal((await pets.create(PET)).kind, 'created');
    } finally {
      await env.close();
    }
  });
});

const postgresAvailable = await externalServicesAvailable();

describe(
  'postgres: the network goes silent',
  { skip: !postgresAvailable && 'PostgreSQL unreachable' },
  () => {
    const TIMEOUT_MS = 300;
    const target = new URL(PG_URL);
    const cleanup: (() => Promise<void> | void)[] = [];
    after(async () => {
      for (const fn of cleanup.reverse()) await fn();
    });

    /** A storage (and app) on a fresh schema whose connections go through a proxy we can silence. */
    async function throughProxy(poolSize: number): Promise<{ proxy: TcpProxy; ctx: TestContext }> {
      const proxy = await new TcpProxy(
        { host: target.hostname, port: Number(target.port || 5432) },
        'pg',
      ).start();
      cleanup.push(() => proxy.close());
      const schema = uniqueName('pg');
      cleanup.push(() => dropSchema(schema));
      const url = new URL(postgresUrl(schema));
      url.port = String(proxy.port);
      const storage = new PostgresDatabase(url.toString(), { poolSize, timeoutMs: TIMEOUT_MS });
      const backend: Backend = {
        name: 'postgres-proxied',
        createDatabase: async () => storage,
        createCounterStore: async () => new MemoryCounterStore(),
      };
      const ctx = await createTestContext(backend);
      cleanup.push(() => ctx.close());
      return { proxy, ctx };
    }

    /** Lets I/O callbacks and promise chains run, without moving the mocked clock. */
    test('every call, and /readyz, fails at DB_TIMEOUT_MS from its start, whatever phase it is in', async (t) => {
      const { proxy, ctx } = await throughProxy(2);
      const { key } = await ctx.createKey();
      const storage: AppDatabase = ctx.database;
      const pets = storage.repository(petRepository);
      // Two pooled connections open, then the network goes silent under them.
      await Promise.all([storage.ping(), storage.ping()]);
      proxy.blackhole();
      t.mock.timers.enable({ apis: ['setTimeout'] });

      const outcomes = new Map<string, unknown>();
      const track = (label: string, promise: Promise<unknown>): void => {
        promise.then(
          (value) => outcomes.set(label, { value }),
          (error: unknown) => outcomes.set(label, error),
        );
      };
      // Two take the connections and never hear back; the rest wait for a slot (pool exhausted) or queue
      // behind them; the idempotent creation is a transaction of several queries.
      track('ping', storage.ping());
      track(
        'createPet (transaction)',
        pets.create(PET, {
          accountId: 1,
          operation: 'createPet',
          key: 'k',
          fingerprint: 'f',
          notBefore: 0,
          now: 1,
        }),
      );
      track('getPet (waits for a slot)', pets.get(1));
      track('listPets (batched)', pets.list({ limit: 5 }));
      track('findKeyByHash (batched)', storage.repository(accountRepository).findKeyByHash('nope'));
      const ready = ctx.app.inject({ url: '/readyz' });
      const api = ctx.app.inject({ url: '/v1/pets', headers: bearer(key) });
      await settleIo();

      t.mock.timers.tick(TIMEOUT_MS - 1);
      await settleIo();
      assert.deepEqual([...outcomes.keys()], [], 'nothing gives up before the budget is spent');

      t.mock.timers.tick(1);
      await settleIo();
      for (const label of [
        'ping',
        'createPet (transaction)',
        'getPet (waits for a slot)',
        'listPets (batched)',
        'findKeyByHash (batched)',
      ]) {
        const error = outcomes.get(label);
        assertUnavailable(error, label);
        assert.ok(
          (error as Error).cause instanceof StorageTimeoutError,
          `${label}: ended by the call's own budget, got cause ${(error as Error).cause}`,
        );
      }
      // A request's first database call (its key lookup) finds the database silent: it is answered 503 by
      // then, as is /readyz.
      const readyz = await ready;
      assert.equal(readyz.statusCode, 503);
      assert.equal(readyz.json().storage, 'unavailable');
      const res = await api;
      assert.equal(res.statusCode, 503, res.body);
      assert.equal(res.json().code, 'service_unavailable');
      t.mock.timers.reset();

      // Timed-out connections were destroyed, not returned: once the network is back, calls succeed on
      // fresh connections instead of reading the answers to abandoned queries.
      await proxy.restore();
      await storage.ping();
      assert.deepEqual(await pets.list({ limit: 5 }), []);
    });
  },
);
