/**
 * What operators see: the request log line's fields, ban and unban events, and the /metrics series that
 * count rate-limit rejections, bans, the counter store's state and the database pool, on every backend.
 * The log is pino's real output, captured through a stream; metrics are read from /metrics after real
 * requests through the HTTP layer.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { buildApp } from '../src/app.js';
import type { Database } from '../src/db/database.js';
import { mintKey } from '../src/modules/accounts/mint.js';
import { accountRepository } from '../src/modules/accounts/repository.js';
import { RedisCounterStore } from '../src/ratelimit/redis.js';
import { LOG_WRITE_BYTES, logDestination, loggerOptions } from '../src/server.js';
import { SERVICE_VERSION } from '../src/version.js';
import type { CounterStore } from '../src/ratelimit/store.js';
import {
  backends,
  bearer,
  defaultTestConfig,
  externalServicesAvailable,
  REDIS_URL,
  sqliteMemory,
  TestClock,
  uniqueName,
} from './helpers.js';
import { deleteKeys } from '../support/redis.js';
import { TcpProxy } from '../support/tcp-proxy.js';

type LogLine = Record<string, unknown> & { level: string; msg: string };
type RequestLine = LogLine & {
  req: { method: string; url: string; host: string; remoteAddress: string; remotePort?: number };
  res: { statusCode: number };
  responseTime: number;
  route: string;
  userAgent?: string;
};

/** The service's own logger configuration (server.ts), writing to an array. */
function captureLogger() {
  const lines: LogLine[] = [];
  const logger = pino(loggerOptions({ logLevel: 'info' }), {
    write: (line: string) => void lines.push(JSON.parse(line)),
  });
  return { logger, lines };
}

/** The value of one series in Prometheus text, or undefined when the series is absent. */
function metric(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

async function metrics(app: FastifyInstance): Promise<string> {
  const res = await app.inject({ url: '/metrics' });
  assert.equal(res.statusCode, 200);
  return res.body;
}

for (const backend of await backends()) {
  describe(`operations [${backend.name}]`, () => {
    let database: Database;
    let counterStore: CounterStore;
    let app: FastifyInstance;
    let log: ReturnType<typeof captureLogger>;
    const clock = new TestClock();

    before(async () => {
      database = await backend.createDatabase();
      await database.migrate();
      counterStore = await backend.createCounterStore(await database.installationId());
      log = captureLogger();
      app = await buildApp({
        config: { ...defaultTestConfig, banThresholdFactor: 1 },
        database,
        counterStore,
        clock: clock.fn,
        logger: log.logger,
      });
    });
    after(async () => {
      await app.close();
      await counterStore.close();
      await database.close();
    });

    async function keyFor(name: string, perMinute = 1000): Promise<string> {
      const accounts = database.repository(accountRepository);
      const account = await accounts.upsertAccount(
        { name, plan: 'enterprise', perMinute, perDay: 100_000 },
        clock.now,
      );
      return (await mintKey(accounts, account.id, clock.now)).key;
    }

    const requestLines = () => log.lines.filter((l): l is RequestLine => l.msg === 'request completed');

    test('a request line carries the route template, account, client address and user agent', async () => {
      const key = await keyFor('logged');
      const res = await app.inject({
        url: '/v1/pets/424242',
        headers: { ...bearer(key), 'user-agent': 'ops-test/1.0' },
      });
      assert.equal(res.statusCode, 404);
      const line = requestLines().find((l) => l.req.url === '/v1/pets/424242');
      assert.ok(line, JSON.stringify(log.lines));
      assert.equal(line.req.method, 'GET');
      assert.equal(line.route, '/v1/pets/:petId');
      assert.equal(line.res.statusCode, 404);
      assert.equal(line.code, 'pet_not_found');
      assert.equal(line.account, 'logged');
      assert.equal(line.req.remoteAddress, '127.0.0.1');
      assert.equal(line.userAgent, 'ops-test/1.0');
      assert.equal(line.reqId, res.headers['x-request-id']);
      assert.equal(typeof line.responseTime, 'number');
      assert.equal('trace_id' in line, false, 'no trace id while tracing is off');
      assert.equal(JSON.stringify(log.lines).includes(key), false, 'no line carries the key');
    });

    test('every line names the service, its version and its level by name', async () => {
      await app.inject({ url: '/v1/pets?limit=1' });
      assert.ok(log.lines.length > 0);
      for (const line of log.lines) {
        assert.equal(line.service, 'pet-adoption');
        assert.equal(line.version, SERVICE_VERSION);
        assert.ok(['info', 'warn', 'error'].includes(line.level), JSON.stringify(line));
      }
      assert.equal(requestLines().at(-1)!.level, 'info');
    });

    test('an error without a key logs its code and no account; a success logs no code', async () => {
      await app.inject({ url: '/v1/pets?limit=1', headers: { 'user-agent': 'anonymous/2' } });
      const anonymous = requestLines().find((l) => l.userAgent === 'anonymous/2');
      assert.ok(anonymous);
      assert.equal(anonymous.code, 'missing_api_key');
      assert.equal(anonymous.route, '/v1/pets');
      assert.equal('account' in anonymous, false);
      const key = await keyFor('fine');
      await app.inject({ url: '/v1/pets?limit=1', headers: { ...bearer(key), 'user-agent': 'fine/3' } });
      const fine = requestLines().find((l) => l.userAgent === 'fine/3');
      assert.ok(fine);
      assert.equal(fine.res.statusCode, 200);
      assert.equal('code' in fine, false);
      assert.equal(fine.account, 'fine');
    });

    test('rejections are counted by reason; a ban and its lifting are logged and counted once', async () => {
      const before = await metrics(app);
      const limitedBefore =
        metric(before, 'pet_adoption_rate_limit_rejections_total{reason="rate_limited",subject="account"}') ??
        0;
      const bansBefore = metric(before, 'pet_adoption_rate_limit_bans_total') ?? 0;
      const key = await keyFor('hammer', 2);
      const codes: string[] = [];
      // 2 allowed, then rejected ones; the third rejection in the minute exceeds 2 × 1 and bans.
      for (let i = 0; i < 6; i++) {
        const res = await app.inject({ url: '/v1/pets?limit=1', headers: bearer(key) });
        codes.push(res.statusCode === 200 ? 'ok' : (res.json().code as string));
      }
      assert.deepEqual(codes, [
        'ok',
        'ok',
        'rate_limited',
        'rate_limited',
        'temporarily_banned',
        'temporarily_banned',
      ]);
      let text = await metrics(app);
      assert.equal(
        metric(text, 'pet_adoption_rate_limit_rejections_total{reason="rate_limited",subject="account"}'),
        limitedBefore + 2,
      );
      assert.equal(
        metric(
          text,
          'pet_adoption_rate_limit_rejections_total{reason="temporarily_banned",subject="account"}',
        ),
        2,
      );
      assert.equal(metric(text, 'pet_adoption_rate_limit_bans_total'), bansBefore + 1);
      const banned = log.lines.filter((l) => l.event === 'account_banned');
      assert.equal(banned.length, 1, JSON.stringify(banned));
      assert.equal(banned[0]!.account, 'hammer');
      assert.equal(banned[0]!.level, 'warn');
      assert.equal(typeof banned[0]!.bannedUntil, 'string');
      // The 429 lines name the account too.
      assert.ok(
        requestLines().some((l) => l.code === 'temporarily_banned' && l.account === 'hammer'),
        'the banned request is logged with its account',
      );

      // `accounts unban` writes this; the next request finds the ban lifted.
      clock.advance(1);
      assert.equal(await database.repository(accountRepository).liftBan('hammer', clock.now), true);
      clock.advance(60_000);
      const res = await app.inject({ url: '/v1/pets?limit=1', headers: bearer(key) });
      assert.equal(res.statusCode, 200, res.body);
      const unbanned = log.lines.filter((l) => l.event === 'account_unbanned');
      assert.equal(unbanned.length, 1, JSON.stringify(log.lines.slice(-5)));
      assert.equal(unbanned[0]!.account, 'hammer');
      text = await metrics(app);
      assert.equal(metric(text, 'pet_adoption_rate_limit_unbans_total'), 1);
    });

    test('invalid keys beyond the lockout and unkeyed floods are counted by address', async () => {
      const ip = '203.0.113.9';
      const headers = { authorization: 'Bearer pas_notarealkeyatall' };
      for (let i = 0; i < 32; i++) await app.inject({ url: '/v1/pets', headers, remoteAddress: ip });
      const text = await metrics(app);
      assert.ok(
        (metric(
          text,
          'pet_adoption_rate_limit_rejections_total{reason="too_many_invalid_keys",subject="address"}',
        ) ?? 0) >= 1,
        text
          .split('\n')
          .filter((l) => l.startsWith('pet_adoption_rate_limit'))
          .join('\n'),
      );
    });

    test('request latency buckets reach the request timeout (30 s)', async () => {
      await app.inject({ url: '/v1/pets?limit=1' });
      const text = await metrics(app);
      assert.match(text, /^pet_adoption_http_request_duration_seconds_bucket\{le="30",.*route="\/v1\/pets"/m);
      assert.match(text, /^pet_adoption_http_request_duration_seconds_bucket\{le="10",/m);
    });

    test('the counter store state and (PostgreSQL only) the pool are on /metrics', async () => {
      const text = await metrics(app);
      const state = counterStore.kind === 'memory' ? 'memory' : 'redis';
      assert.equal(metric(text, `pet_adoption_rate_limit_store_state{state="${state}"}`), 1);
      assert.equal(metric(text, 'pet_adoption_rate_limit_store_state{state="memory-fallback"}'), 0);
      if (database.kind === 'postgres') {
        // Connections by state (they add up to the open ones); waiting callers on a gauge of their own.
        const idle = metric(text, 'pet_adoption_db_pool_connections{state="idle"}');
        const used = metric(text, 'pet_adoption_db_pool_connections{state="used"}');
        assert.ok(idle !== undefined && used !== undefined && idle + used >= 1, text);
        assert.equal(metric(text, 'pet_adoption_db_pool_connections{state="total"}'), undefined);
        assert.equal(metric(text, 'pet_adoption_db_pool_pending_requests'), 0);
      } else {
        assert.equal(text.includes('db_pool'), false, 'SQLite has no pool');
      }
    });
  });
}

describe('operations: Redis outage events', { skip: !(await externalServicesAvailable()) }, () => {
  test('a fallback and the recovery are logged as events, counted, and shown on /metrics', async (t) => {
    const target = new URL(REDIS_URL);
    const proxy = await new TcpProxy(
      { host: target.hostname, port: Number(target.port || 6379) },
      'redis',
    ).start();
    t.after(() => proxy.close());
    const database = await sqliteMemory.createDatabase();
    t.after(() => database.close());
    await database.migrate();
    const prefix = `${uniqueName('ops')}:`;
    const log = captureLogger();
    const store = new RedisCounterStore(`redis://127.0.0.1:${proxy.port}`, {
      prefix,
      installationId: await database.installationId(),
      timeoutMs: 50,
      probeEveryMs: 50,
      logger: log.logger,
    });
    t.after(async () => {
      await store.close();
      await deleteKeys(REDIS_URL, prefix);
    });
    assert.equal(await store.ready(5000), true);
    const app = await buildApp({
      config: defaultTestConfig,
      database,
      counterStore: store,
      logger: log.logger,
    });
    t.after(() => app.close());
    assert.equal(metric(await metrics(app), 'pet_adoption_rate_limit_store_state{state="redis"}'), 1);

    const down = once(store, 'down');
    proxy.refuse();
    proxy.dropAll();
    await down;
    let text = await metrics(app);
    assert.equal(metric(text, 'pet_adoption_rate_limit_store_state{state="memory-fallback"}'), 1);
    assert.equal(metric(text, 'pet_adoption_rate_limit_store_state{state="redis"}'), 0);
    assert.equal(metric(text, 'pet_adoption_rate_limit_store_fallbacks_total'), 1);
    const fallback = log.lines.filter((l) => l.event === 'rate_limit_store_fallback');
    assert.equal(fallback.length, 1);
    assert.equal(fallback[0]!.level, 'warn');

    const up = once(store, 'up');
    await proxy.restore();
    await up;
    text = await metrics(app);
    assert.equal(metric(text, 'pet_adoption_rate_limit_store_state{state="redis"}'), 1);
    assert.equal(log.lines.filter((l) => l.event === 'rate_limit_store_recovered').length, 1);
  });
});

describe('operations: the log writer', () => {
  test('one write carries every line of a busy turn, whole and in order', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'pet-adoption-log-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'log');
    const destination = logDestination(openSync(file, 'w'));
    const writes: number[] = [];
    destination.writer.on('write', (bytes: number) => writes.push(bytes));
    // A busy turn: more lines than pino's default writer takes in one write (16 KiB), in one synchronous run.
    const lines = Array.from({ length: 2000 }, (_, i) => `{"n":${i},"pad":"${'x'.repeat(380)}"}\n`);
    const bytes = lines.reduce((sum, line) => sum + line.length, 0);
    assert.ok(bytes > 16 * 1024 && bytes < LOG_WRITE_BYTES);
    for (const line of lines) destination.write(line);
    await once(destination.writer, 'drain');
    // The first line starts a write at once; the rest of the turn goes out in the next one.
    assert.deepEqual(writes, [lines[0]!.length, bytes - lines[0]!.length]);
    assert.equal(readFileSync(file, 'utf8'), lines.join(''));
    destination.writer.end();
    await once(destination.writer, 'close');
  });
});
