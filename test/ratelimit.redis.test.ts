/**
 * Rate limits on Redis, beyond the shared behavioural suite (ratelimit.test.ts):
 * - deployments sharing a Redis: keys are namespaced by the database's installation id, so two databases
 *   never share counts or bans whatever REDIS_PREFIX says, while instances on one database do;
 * - Redis failure and recovery, on a redis-server this file starts, kills, hangs and restarts itself: the
 *   fallback starts from Redis' last counts and hands its own back, so one instance never admits more than
 *   the quota in a window.
 * The request clock is the TestClock, so no window rolls over during a test; waits are for events (the
 * store's 'up', 'reconnecting', redis-server's ready line), never fixed sleeps.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test, type TestContext as NodeTestContext } from 'node:test';
import type { FastifyBaseLogger, FastifyInstance, LightMyRequestResponse } from 'fastify';
import pino from 'pino';
import { buildApp } from '../src/app.js';
import { createCounterStore } from '../src/ratelimit/index.js';
import { RedisCounterStore } from '../src/ratelimit/redis.js';
import type { Database } from '../src/db/database.js';
import { SqliteDatabase } from '../src/db/sqlite.js';
import { mintKey } from '../src/modules/accounts/mint.js';
import { accountRepository } from '../src/modules/accounts/repository.js';
import {
  bearer,
  createTestContext,
  defaultTestConfig,
  externalServicesAvailable,
  IN_CI,
  REDIS_URL,
  sqliteMemory,
  TestClock,
  uniqueName,
  type TestContext,
} from './helpers.js';
import {
  deleteKeys,
  freePort,
  killRedisServer,
  listKeys,
  redisServerInstalled,
  startRedisServer,
} from '../support/redis.js';

const redisAvailable = await externalServicesAvailable();

function get(app: FastifyInstance, key: string): Promise<LightMyRequestResponse> {
  return app.inject({ url: '/v1/categories', headers: bearer(key) });
}

function remaining(res: LightMyRequestResponse): number {
  const value = res.headers['x-ratelimit-remaining'];
  assert.equal(typeof value, 'string', `${res.statusCode} ${res.body}`);
  return Number(value);
}

/** Sends `n` requests one after another; returns how many were admitted (200) and the answers. */
async function send(
  app: FastifyInstance,
  key: string,
  n: number,
): Promise<{ admitted: number; codes: string[] }> {
  let admitted = 0;
  const codes: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await get(app, key);
    assert.ok(res.statusCode === 200 || res.statusCode === 429, `${res.statusCode} ${res.body}`);
    if (res.statusCode === 200) admitted++;
    else codes.push(res.json().code as string);
  }
  return { admitted, codes };
}

/** An app of its own over `storage` whose counters are the production factory's, on `prefix`. */
async function instance(
  t: NodeTestContext,
  storage: Database,
  redis: {
    url: string;
    prefix: string;
    timeoutMs?: number;
    probeEveryMs?: number;
    logger?: FastifyBaseLogger;
  },
  clock: TestClock,
): Promise<{ app: FastifyInstance; store: RedisCounterStore }> {
  const store = new RedisCounterStore(redis.url, {
    prefix: redis.prefix,
    installationId: await storage.installationId(),
    timeoutMs: redis.timeoutMs ?? 50,
    probeEveryMs: redis.probeEveryMs ?? 50,
    logger: redis.logger,
  });
  t.after(() => store.close());
  const app = await buildApp({
    config: defaultTestConfig,
    database: storage,
    counterStore: store,
    clock: clock.fn,
  });
  t.after(() => app.close());
  return { app, store };
}

// ---------------------------------------------------------------------------------------------------------
// Deployments sharing a Redis.

const storageKinds: { name: string; create(): Promise<Database> }[] = [
  { name: 'sqlite', create: () => sqliteMemory.createDatabase() },
];
if (redisAvailable) {
  const { createTestPostgresDatabase } = await import('../support/postgres.js');
  storageKinds.push({ name: 'postgres', create: () => createTestPostgresDatabase() });
}

describe('one script per subject and turn', { skip: !redisAvailable && 'Redis unreachable' }, () => {
  test('the consumes of one turn: one command per subject, each answered as if sent alone, in order', async () => {
    const prefix = `${uniqueName('turn')}:`;
    const store = new RedisCounterStore(REDIS_URL, { prefix, installationId: 'i', timeoutMs: 2000 });
    try {
      assert.equal(await store.ready(5000), true);
      const now = 1_700_000_000_000;
      const ask = (subject: string, limit: number) =>
        store.consume({
          subject,
          windows: [{ id: 'm:1', limit, ttlMs: 60_000 }],
          rejectedId: 'x:1',
          banThreshold: Infinity,
          banMs: 1000,
          now,
          banLiftedAt: null,
        });
      const before = store.commandsSent;
      // Asked in one turn: 8 consumes of a quota of 5 for one subject, 3 of a quota of 10 for another, and for
      // a third, consumes that differ (sent as groups of alike ones in one script, still run in order).
      const [busy, quiet, mixed] = await Promise.all([
        Promise.all(Array.from({ length: 8 }, () => ask('a:1', 5))),
        Promise.all(Array.from({ length: 3 }, () => ask('a:2', 10))),
        Promise.all([ask('a:3', 2), ask('a:3', 2), ask('a:3', 10), ask('a:3', 2)]),
      ]);
      assert.equal(store.commandsSent - before, 3, 'one script per subject');
      assert.deepEqual(
        mixed.map((r) => [r.allowed, r.counts[0]]),
        [
          [true, 1],
          [true, 2],
          [true, 3],
          [false, 3],
        ],
      );
      assert.deepEqual(
        busy.map((r) => [r.allowed, r.counts[0]]),
        [
          [true, 1],
          [true, 2],
          [true, 3],
          [true, 4],
          [true, 5],
          [false, 5],
          [false, 5],
          [false, 5],
        ],
      );
      assert.deepEqual(
        quiet.map((r) => [r.allowed, r.counts[0]]),
        [
          [true, 1],
          [true, 2],
          [true, 3],
        ],
      );
    } finally {
      await store.close();
      await deleteKeys(REDIS_URL, prefix);
    }
  });
});

describe('deployments sharing one Redis', { skip: !redisAvailable && 'Redis unreachable' }, () => {
  for (const kind of storageKinds) {
    test(`[${kind.name}] two databases, one REDIS_PREFIX: account 1 limited and banned on one is untouched on the other`, async (t) => {
      const prefix = `${uniqueName('shared')}:`;
      t.after(() => deleteKeys(REDIS_URL, prefix));
      const config = { redisUrl: REDIS_URL, redisPrefix: prefix, redisTimeoutMs: 1000 };
      const deployments: TestContext[] = [];
      for (let i = 0; i < 2; i++) {
        const ctx = await createTestContext({
          name: `${kind.name}+redis`,
          createDatabase: () => kind.create(),
          // The production factory, as `serve` calls it.
          createCounterStore: (installationId) =>
            createCounterStore(config, { installationId: installationId! }),
        });
        t.after(() => ctx.close());
        deployments.push(ctx);
      }
      const [production, staging] = deployments as [TestContext, TestContext];
      const ids = await Promise.all(deployments.map((d) => d.database.installationId()));
      assert.notEqual(ids[0], ids[1]);
      const { key: prodKey } = await production.createKey({ plan: 'enterprise', perMinute: 3, perDay: 100 });
      const { key: stagingKey } = await staging.createKey({ plan: 'enterprise', perMinute: 3, perDay: 100 });
      // The same account id in both databases: the collision this guards against.
      const accountIds = await Promise.all(
        deployments.map(async (d) => (await d.accounts.listKeys()).map((k) => k.account)),
      );
      const [prodAccount, stagingAccount] = await Promise.all([
        production.accounts.findAccount(accountIds[0]![0]!),
        staging.accounts.findAccount(accountIds[1]![0]!),
      ]);
      assert.equal(prodAccount!.id, stagingAccount!.id);

      // Production: quota used up, then banned (more rejections than the per-minute quota).
      assert.equal((await send(production.app, prodKey, 3)).admitted, 3);
      const limited = await send(production.app, prodKey, 4);
      assert.equal(limited.admitted, 0);
      assert.equal(limited.codes.at(-1), 'temporarily_banned');
      // Staging's account with the same id: full quota, no ban.
      const first = await get(staging.app, stagingKey);
      assert.equal(first.statusCode, 200, first.body);
      assert.equal(remaining(first), 2);
      assert.equal((await send(staging.app, stagingKey, 2)).admitted, 2);
      // Every key is under the prefix, then the deployment's own installation id.
      const keys = await listKeys(REDIS_URL, prefix);
      assert.ok(keys.length > 0);
      for (const k of keys)
        assert.ok(
          ids.some((id) => k.startsWith(`${prefix}${id}:`)),
          k,
        );
    });
  }

  test('[sqlite] two instances on one database share counts, and the installation id', async (t) => {
    const prefix = `${uniqueName('same')}:`;
    t.after(() => deleteKeys(REDIS_URL, prefix));
    const dir = mkdtempSync(join(tmpdir(), 'pet-adoption-shared-'));
    const a = new SqliteDatabase(join(dir, 'shared.db'));
    const b = new SqliteDatabase(join(dir, 'shared.db'));
    t.after(async () => {
      await a.close();
      await b.close();
      rmSync(dir, { recursive: true, force: true });
    });
    assert.equal(await a.installationId(), await b.installationId());
    const clock = new TestClock();
    const one = await instance(t, a, { url: REDIS_URL, prefix, timeoutMs: 1000 }, clock);
    const two = await instance(t, b, { url: REDIS_URL, prefix, timeoutMs: 1000 }, clock);
    const quota = { name: 'shared', plan: 'enterprise', perMinute: 5, perDay: 100 } as const;
    const account = await a.repository(accountRepository).upsertAccount(quota, clock.now);
    const { key } = await mintKey(a.repository(accountRepository), account.id, clock.now);
    assert.equal((await send(one.app, key, 3)).admitted, 3);
    const res = await get(two.app, key);
    assert.equal(remaining(res), 1);
    assert.equal((await send(two.app, key, 3)).admitted, 1);
  });
});

// ---------------------------------------------------------------------------------------------------------
// Redis failure and recovery: only Redis has them.

interface LogLine {
  level: number;
  msg: string;
}

function captureLogger(): {
  logger: FastifyBaseLogger;
  lines: LogLine[];
  warnings(): LogLine[];
  infos(): LogLine[];
} {
  const lines: LogLine[] = [];
  const logger = pino(
    { level: 'info' },
    { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) },
  );
  return {
    logger,
    lines,
    warnings: () => lines.filter((l) => l.level === 40),
    infos: () => lines.filter((l) => l.level === 30),
  };
}

if (!redisServerInstalled) {
  if (IN_CI) throw new Error('CI=true requires redis-server on PATH for the Redis failover tests');
  console.log('# NOTICE: skipping the Redis restart tests: redis-server is not on PATH');
}

/** One request through the app; a Redis outage never turns into a 5xx. */
async function answered(app: FastifyInstance, key: string): Promise<LightMyRequestResponse> {
  const res = await get(app, key);
  assert.ok(res.statusCode < 500, `${res.statusCode} ${res.body}`);
  return res;
}

async function readiness(app: FastifyInstance): Promise<string> {
  const res = await app.inject({ url: '/readyz' });
  assert.equal(res.statusCode, 200);
  assert.equal(res.json().status, 'ready');
  return res.json().rateLimitStore as string;
}

/** Resolves once the store counts in Redis again (after handing back what it counted meanwhile). */
async function backOnRedis(store: RedisCounterStore, what: string): Promise<void> {
  assert.equal(await store.ready(10_000), true, what);
}

describe('Redis counter store: failure and recovery', { skip: !redisServerInstalled }, () => {
  test('Redis unreachable from the start: answers from memory, /readyz says memory-fallback, one warning', async (t) => {
    const log = captureLogger();
    const port = await freePort();
    const storage = await sqliteMemory.createDatabase();
    t.after(() => storage.close());
    await storage.migrate();
    const clock = new TestClock();
    const { app, store } = await instance(
      t,
      storage,
      { url: `redis://127.0.0.1:${port}`, prefix: `${uniqueName('rl')}:`, logger: log.logger },
      clock,
    );
    const quota = { name: 'down', plan: 'enterprise', perMinute: 5, perDay: 100 } as const;
    const account = await storage.repository(accountRepository).upsertAccount(quota, clock.now);
    const { key } = await mintKey(storage.repository(accountRepository), account.id, clock.now);
    // Still limited, exactly, by the in-process counters.
    for (let i = 0; i < 5; i++) assert.equal(remaining(await answered(app, key)), 4 - i);
    for (let i = 0; i < 3; i++) assert.equal((await answered(app, key)).json().code, 'rate_limited');
    assert.equal(store.healthy(), false);
    assert.equal(await readiness(app), 'memory-fallback');
    // ioredis keeps retrying (and failing) in the background; the outage is still logged once.
    for (let i = 0; i < 3; i++) await once(store, 'reconnecting');
    assert.equal(log.warnings().length, 1, JSON.stringify(log.lines));
    assert.match(log.warnings()[0]!.msg, /fall back to in-process counters/);
  });

  for (const shape of ['killed, back empty', 'hung, back with its data'] as const) {
    test(
      `one instance, Redis ${shape}: quota 40 with 25 used before, during and after the outage admits exactly 40`,
      { timeout: 30_000 },
      async (t) => {
        const port = await freePort();
        const url = `redis://127.0.0.1:${port}`;
        let server = await startRedisServer(port);
        t.after(() => killRedisServer(server));
        const prefix = `${uniqueName('rl')}:`;
        const ctx = await createTestContext({
          name: 'sqlite+redis(spawned)',
          createDatabase: () => sqliteMemory.createDatabase(),
          createCounterStore: async (installationId) =>
            new RedisCounterStore(url, {
              prefix,
              installationId: installationId!,
              timeoutMs: 50,
              probeEveryMs: 50,
            }),
        });
        t.after(() => ctx.close());
        const storeA = ctx.counterStore as RedisCounterStore;
        // Instance B, on the same database and Redis, shows what Redis holds after the outage.
        const b = await instance(t, ctx.database, { url, prefix }, ctx.clock);
        assert.equal(await storeA.ready(5_000), true);
        assert.equal(await b.store.ready(5_000), true);
        const { key } = await ctx.createKey({ plan: 'enterprise', perMinute: 40, perDay: 10_000 });

        const before = await send(ctx.app, key, 25);
        assert.equal(before.admitted, 25);

        if (shape === 'killed, back empty') await killRedisServer(server);
        else server.kill('SIGSTOP');
        const during = await send(ctx.app, key, 30);
        assert.equal(storeA.healthy(), false, 'the outage was noticed');
        assert.equal(await readiness(ctx.app), 'memory-fallback');
        // The fallback went on from Redis' 25, not from 0.
        assert.equal(during.admitted, 15);
        assert.deepEqual(new Set(during.codes), new Set(['rate_limited']));

        if (shape === 'killed, back empty') server = await startRedisServer(port);
        else server.kill('SIGCONT');
        await backOnRedis(storeA, 'A counts in Redis again');
        assert.equal(await readiness(ctx.app), 'redis');
        const after = await send(ctx.app, key, 15);
        assert.equal(after.admitted, 0);
        // Redis holds the whole count, so another instance admits nothing more either.
        assert.equal((await send(b.app, key, 5)).admitted, 0);
        assert.equal(before.admitted + during.admitted + after.admitted, 40);
      },
    );
  }

  test('a ban decided during the outage reaches Redis when it returns', { timeout: 30_000 }, async (t) => {
    const port = await freePort();
    const url = `redis://127.0.0.1:${port}`;
    let server = await startRedisServer(port);
    t.after(() => killRedisServer(server));
    const prefix = `${uniqueName('rl')}:`;
    const storage = await sqliteMemory.createDatabase();
    t.after(() => storage.close());
    await storage.migrate();
    const clock = new TestClock();
    const a = await instance(t, storage, { url, prefix }, clock);
    const b = await instance(t, storage, { url, prefix }, clock);
    assert.equal(await a.store.ready(5_000), true);
    assert.equal(await b.store.ready(5_000), true);
    const quota = { name: 'hammer', plan: 'enterprise', perMinute: 5, perDay: 100 } as const;
    const account = await storage.repository(accountRepository).upsertAccount(quota, clock.now);
    const { key } = await mintKey(storage.repository(accountRepository), account.id, clock.now);

    await killRedisServer(server);
    // 5 admitted, then more than 5 rejections in the minute: banned, on A's in-process counters.
    const outage = await send(a.app, key, 12);
    assert.equal(outage.admitted, 5);
    assert.equal(outage.codes.at(-1), 'temporarily_banned');
    server = await startRedisServer(port);
    await backOnRedis(a.store, 'A counts in Redis again');
    await backOnRedis(b.store, 'B counts in Redis again');
    const onB = await get(b.app, key);
    assert.equal(onB.statusCode, 429);
    assert.equal(onB.json().code, 'temporarily_banned');
  });
  test(
    'Redis killed, restarted and hung mid-test: no 5xx, /readyz follows, recovery is automatic and logged once',
    { timeout: 30_000 },
    async (t) => {
      const port = await freePort();
      const url = `redis://127.0.0.1:${port}`;
      let server = await startRedisServer(port);
      t.after(() => killRedisServer(server));
      const log = captureLogger();
      const prefix = `${uniqueName('rl')}:`;
      // Two instances of the service on one Redis: A is observed, B shows what is shared.
      const ctx = await createTestContext({
        name: 'sqlite+redis(spawned)',
        createDatabase: () => sqliteMemory.createDatabase(),
        createCounterStore: async (installationId) =>
          new RedisCounterStore(url, {
            prefix,
            installationId: installationId!,
            timeoutMs: 50,
            logger: log.logger,
            probeEveryMs: 50,
          }),
      });
      t.after(() => ctx.close());
      const storeA = ctx.counterStore as RedisCounterStore;
      const b = await instance(t, ctx.database, { url, prefix }, ctx.clock);
      assert.equal(await storeA.ready(5_000), true);
      assert.equal(await b.store.ready(5_000), true);
      const { key } = await ctx.createKey({ plan: 'enterprise', perMinute: 100, perDay: 10_000 });

      // Healthy: the two instances count together, in Redis.
      for (let i = 0; i < 3; i++) assert.equal(remaining(await answered(ctx.app, key)), 99 - i);
      assert.equal(remaining(await get(b.app, key)), 96);
      assert.equal(await readiness(ctx.app), 'redis');
      assert.ok((await listKeys(url, prefix)).length > 0);

      // Killed: every request is still answered from memory, which goes on from A's last count; one warning.
      await killRedisServer(server);
      const remainingWhileDown: number[] = [];
      for (let i = 0; i < 20; i++) {
        const res = await answered(ctx.app, key);
        assert.equal(res.statusCode, 200);
        remainingWhileDown.push(remaining(res));
      }
      assert.equal(
        remainingWhileDown[0],
        96,
        "A's last count from Redis was 3; B's request is not known to A",
      );
      remainingWhileDown.slice(1).forEach((r, i) => assert.equal(r, remainingWhileDown[i]! - 1));
      assert.equal(storeA.healthy(), false);
      assert.equal(await readiness(ctx.app), 'memory-fallback');
      assert.equal(log.warnings().length, 1);

      // Back, empty (it keeps no data): A reconnects by itself, hands back its 23, and counts in Redis again.
      server = await startRedisServer(port);
      await backOnRedis(storeA, 'A reconnects');
      await backOnRedis(b.store, 'B reconnects');
      assert.equal(await readiness(ctx.app), 'redis');
      assert.equal(log.infos().filter((l) => /reachable again/.test(l.msg)).length, 1);
      assert.equal(remaining(await answered(ctx.app, key)), 100 - 24);
      assert.equal(remaining(await get(b.app, key)), 100 - 25);
      assert.ok((await listKeys(url, prefix)).length > 0);

      // Hung (the connection stays open, nothing answers): the timeout bounds the wait, then memory again.
      server.kill('SIGSTOP');
      for (let i = 0; i < 5; i++) assert.equal((await answered(ctx.app, key)).statusCode, 200);
      assert.equal(storeA.healthy(), false);
      assert.equal(await readiness(ctx.app), 'memory-fallback');
      assert.equal(log.warnings().length, 2, 'a new outage, logged once');
      server.kill('SIGCONT');
      // No reconnection happens here; the probe notices Redis answering again.
      await backOnRedis(storeA, 'the probe sees Redis again');
      assert.equal(await readiness(ctx.app), 'redis');
      const a = remaining(await answered(ctx.app, key));
      assert.equal(remaining(await get(b.app, key)), a - 1);
      assert.equal(log.warnings().length, 2);
    },
  );
});
