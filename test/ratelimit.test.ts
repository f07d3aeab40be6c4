/**
 * Rate limits (spec section 8, section 5 rule 4): one behavioural suite, run
 * through the HTTP layer and directly against the counter store, on the in-process store and on Redis.
 * Time is the injectable TestClock, so windows, days and bans are crossed without sleeping; the stores'
 * real-time expiry is crossed with an injected clock (memory) or by waiting for Redis to expire the keys.
 * Redis outages and shared Redis deployments: ratelimit.redis.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, test, type TestContext as NodeTestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { LightMyRequestResponse } from 'fastify';
import { Redis } from 'ioredis';
import type { AppConfig } from '../src/app.js';
import { generateApiKey } from '../src/modules/accounts/keys.js';
import { MemoryCounterStore } from '../src/ratelimit/memory.js';
import { RedisCounterStore } from '../src/ratelimit/redis.js';
import type { ConsumeRequest, CounterStore } from '../src/ratelimit/store.js';
import {
  bearer,
  createTestContext,
  externalServicesAvailable,
  REDIS_URL,
  sqliteMemory,
  type Backend,
  type TestContext,
} from './helpers.js';
import { createTestRedisStore, listKeys } from '../support/redis.js';

interface StoreKind {
  name: 'memory' | 'redis';
  create(): Promise<CounterStore>;
  /** A second store on the same counters, as another instance of the service has; memory has none. */
  twin?(of: CounterStore): Promise<CounterStore>;
  /** Lets `ms` of real time pass as far as the store's own expiry (TTLs) is concerned. */
  passRealTime(store: CounterStore, ms: number): Promise<void>;
}

/** Memory stores tell expiry time by a clock the test moves. */
const memoryClocks = new WeakMap<CounterStore, { now: number }>();
const memoryKind: StoreKind = {
  name: 'memory',
  async create() {
    const clock = { now: Date.now() };
    const store = new MemoryCounterStore(10_000, () => clock.now);
    memoryClocks.set(store, clock);
    return store;
  },
  async passRealTime(store, ms) {
    memoryClocks.get(store)!.now += ms;
  },
};
/**
 * The contract is about what Redis counts, so these stores wait for Redis as long as it takes on a loaded
 * machine: with the production 50 ms a slow answer would fall back to in-process counting, which
 * test/ratelimit.redis.test.ts covers on its own.
 */
const CONTRACT_REDIS_TIMEOUT_MS = 5_000;
const redisKind: StoreKind = {
  name: 'redis',
  create: () => createTestRedisStore({ timeoutMs: CONTRACT_REDIS_TIMEOUT_MS }),
  twin: (of) => {
    const { prefix, installationId } = of as RedisCounterStore;
    return createTestRedisStore({ prefix, installationId, timeoutMs: CONTRACT_REDIS_TIMEOUT_MS });
  },
  // Redis' clock cannot be moved: wait until Redis has expired every key of the store due within `ms`.
  async passRealTime(store, ms) {
    const redis = new Redis(REDIS_URL);
    try {
      const keys = await listKeys(REDIS_URL, (store as RedisCounterStore).prefix);
      const ttls = await Promise.all(keys.map((k) => redis.pttl(k)));
      const due = keys.filter((_, i) => ttls[i]! > 0 && ttls[i]! <= ms);
      assert.ok(due.length > 0, 'keys with a TTL within the time to pass');
      const deadline = Date.now() + 5_000;
      // EXISTS also makes Redis expire a key that is due, so this sees the expiry as soon as it happens.
      while ((await redis.exists(...due)) > 0) {
        if (Date.now() > deadline) throw new Error(`Redis did not expire ${due.join(', ')}`);
        await sleep(5);
      }
    } finally {
      redis.disconnect();
    }
  },
};

const redisAvailable = await externalServicesAvailable();
const kinds = redisAvailable ? [memoryKind, redisKind] : [memoryKind];

// The TestClock's default start: mid-minute, mid-day.
const T0 = Date.UTC(2026, 5, 15, 12, 0, 30);
const MINUTE_END = Date.UTC(2026, 5, 15, 12, 1, 0);
const MIDNIGHT = Date.UTC(2026, 5, 16);
const SECONDS_TO_MIDNIGHT = (MIDNIGHT - T0) / 1000;

function backendWith(name: string, createCounterStore: () => Promise<CounterStore>): Backend {
  return { name, createDatabase: () => sqliteMemory.createDatabase(), createCounterStore };
}

/** A fresh app (own storage, own counters) for one test, closed when the test ends. */
async function open(
  t: NodeTestContext,
  kind: StoreKind,
  config: Partial<AppConfig> = {},
): Promise<TestContext> {
  const ctx = await createTestContext(
    backendWith(`sqlite+${kind.name}`, () => kind.create()),
    { config },
  );
  t.after(() => ctx.close());
  return ctx;
}

interface CallOptions {
  method?: 'GET' | 'POST' | 'DELETE';
  url?: string;
  headers?: Record<string, string>;
  remoteAddress?: string;
  payload?: object;
}

function call(
  ctx: TestContext,
  key: string | undefined,
  options: CallOptions = {},
): Promise<LightMyRequestResponse> {
  return ctx.app.inject({
    method: options.method ?? 'GET',
    url: options.url ?? '/v1/categories',
    headers: { ...(key === undefined ? {} : bearer(key)), ...options.headers },
    ...(options.remoteAddress === undefined ? {} : { remoteAddress: options.remoteAddress }),
    ...(options.payload === undefined ? {} : { payload: options.payload }),
  });
}

function header(res: LightMyRequestResponse, name: string): string {
  const value = res.headers[name];
  assert.equal(typeof value, 'string', `${name} header on ${res.statusCode} ${res.body}`);
  return value as string;
}

/** Whole seconds of a Unix timestamp, as X-RateLimit-Reset carries it. */
const unix = (ms: number) => String(Math.ceil(ms / 1000));

interface Expected {
  status: number;
  limit: number;
  remaining: number;
  resetAt: number;
  policy?: string;
  ratelimit?: string;
  retryAfter?: number;
  code?: string;
}

function expectResponse(res: LightMyRequestResponse, e: Expected): void {
  const where = `${res.statusCode} ${res.body}`;
  assert.equal(res.statusCode, e.status, where);
  assert.equal(header(res, 'x-ratelimit-limit'), String(e.limit), where);
  assert.equal(header(res, 'x-ratelimit-remaining'), String(e.remaining), where);
  assert.equal(header(res, 'x-ratelimit-reset'), unix(e.resetAt), where);
  if (e.policy !== undefined) assert.equal(header(res, 'ratelimit-policy'), e.policy, where);
  if (e.ratelimit !== undefined) assert.equal(header(res, 'ratelimit'), e.ratelimit, where);
  if (e.retryAfter !== undefined) assert.equal(header(res, 'retry-after'), String(e.retryAfter), where);
  else assert.equal(res.headers['retry-after'], undefined, where);
  if (e.code !== undefined) {
    assert.match(header(res, 'content-type'), /^application\/json/);
    const body = res.json();
    assert.equal(body.code, e.code, where);
    assert.equal(body.status, e.status, where);
    assert.equal(typeof body.message, 'string');
  }
}

const policy = (perMinute: number, perDay?: number) =>
  perDay === undefined
    ? `"minute";q=${perMinute};w=60`
    : `"minute";q=${perMinute};w=60, "day";q=${perDay};w=86400`;

for (const kind of kinds) {
  describe(`rate limits over HTTP [sqlite+${kind.name}]`, () => {
    test('each plan gets its quota, described exactly by the headers', async (t) => {
      const ctx = await open(t, kind);
      const plans = [
        { plan: 'free', perMinute: 60, perDay: 1_000 },
        { plan: 'pro', perMinute: 300, perDay: 10_000 },
        { plan: 'business', perMinute: 1_000, perDay: 100_000 },
        { plan: 'enterprise', perMinute: 7, perDay: 5_000 },
      ] as const;
      for (const p of plans) {
        const { key } = await ctx.createKey({ plan: p.plan, perMinute: p.perMinute, perDay: p.perDay });
        expectResponse(await call(ctx, key), {
          status: 200,
          limit: p.perMinute,
          remaining: p.perMinute - 1,
          resetAt: MINUTE_END,
          policy: policy(p.perMinute, p.perDay),
          ratelimit: `"minute";r=${p.perMinute - 1};t=30, "day";r=${p.perDay - 1};t=${SECONDS_TO_MIDNIGHT}`,
        });
      }
    });

    test('free: 60 per minute, then 429 rate_limited until the minute ends; 1,000 per day', async (t) => {
      const ctx = await open(t, kind);
      const { key } = await ctx.createKey({ plan: 'free' });
      for (let i = 0; i < 60; i++) {
        expectResponse(await call(ctx, key), {
          status: 200,
          limit: 60,
          remaining: 59 - i,
          resetAt: MINUTE_END,
        });
      }
      expectResponse(await call(ctx, key), {
        status: 429,
        limit: 60,
        remaining: 0,
        resetAt: MINUTE_END,
        ratelimit: `"minute";r=0;t=30, "day";r=940;t=${SECONDS_TO_MIDNIGHT}`,
        retryAfter: 30,
        code: 'rate_limited',
      });
      // 15 more full minutes, then 40 requests of minute 16: 1,000 in the day.
      for (let minute = 1; minute <= 16; minute++) {
        ctx.clock.set(MINUTE_END + (minute - 1) * 60_000);
        const batch = await Promise.all(
          Array.from({ length: minute === 16 ? 40 : 60 }, () => call(ctx, key)),
        );
        assert.deepEqual(new Set(batch.map((r) => r.statusCode)), new Set([200]));
      }
      const now = ctx.clock.now;
      expectResponse(await call(ctx, key), {
        status: 429,
        limit: 1_000,
        remaining: 0,
        resetAt: MIDNIGHT,
        ratelimit: `"minute";r=20;t=60, "day";r=0;t=${(MIDNIGHT - now) / 1000}`,
        retryAfter: (MIDNIGHT - now) / 1000,
        code: 'rate_limited',
      });
    });

    test('a plan change applies from the next request', async (t) => {
      const ctx = await open(t, kind);
      const { key } = await ctx.createKey({ name: 'upgrader', plan: 'free' });
      for (let i = 0; i < 60; i++) await call(ctx, key);
      assert.equal((await call(ctx, key)).statusCode, 429);
      await ctx.accounts.upsertAccount({ name: 'upgrader', plan: 'pro' }, ctx.clock.now);
      expectResponse(await call(ctx, key), { status: 200, limit: 300, remaining: 239, resetAt: MINUTE_END });
      await ctx.accounts.upsertAccount(
        { name: 'upgrader', plan: 'enterprise', perMinute: 62, perDay: 70 },
        ctx.clock.now,
      );
      expectResponse(await call(ctx, key), {
        status: 200,
        limit: 62,
        remaining: 0,
        resetAt: MINUTE_END,
        policy: policy(62, 70),
      });
      assert.equal((await call(ctx, key)).statusCode, 429);
    });

    test('the X-RateLimit-* trio describes the window nearest exhaustion', async (t) => {
      const ctx = await open(t, kind);
      const { key } = await ctx.createKey({ plan: 'enterprise', perMinute: 10, perDay: 13 });
      // Minute 9 left, day 12 left: the minute is nearer.
      expectResponse(await call(ctx, key), { status: 200, limit: 10, remaining: 9, resetAt: MINUTE_END });
      ctx.clock.set(MINUTE_END);
      for (let i = 0; i < 8; i++) await call(ctx, key);
      // Minute 1 left, day 3 left.
      expectResponse(await call(ctx, key), {
        status: 200,
        limit: 10,
        remaining: 1,
        resetAt: MINUTE_END + 60_000,
      });
      // Next minute: minute 9 left, day 2 left: now the day is nearer.
      ctx.clock.set(MINUTE_END + 60_000);
      expectResponse(await call(ctx, key), {
        status: 200,
        limit: 13,
        remaining: 2,
        resetAt: MIDNIGHT,
        ratelimit: `"minute";r=9;t=60, "day";r=2;t=${(MIDNIGHT - ctx.clock.now) / 1000}`,
      });
    });

    test('every /v1 response carries the headers, errors included (401, 404, 405, 400, 429)', async (t) => {
      const ctx = await open(t, kind, { unauthenticatedPerMinute: 5 });
      const { key } = await ctx.createKey({ plan: 'enterprise', perMinute: 5, perDay: 100 });
      const ip = { limit: 5, resetAt: MINUTE_END, policy: policy(5) };
      expectResponse(await call(ctx, undefined), {
        ...ip,
        status: 401,
        remaining: 4,
        code: 'missing_api_key',
      });
      expectResponse(await call(ctx, generateApiKey()), {
        ...ip,
        status: 401,
        remaining: 3,
        code: 'invalid_api_key',
      });
      expectResponse(await call(ctx, 'not-a-key'), {
        ...ip,
        status: 401,
        remaining: 2,
        code: 'malformed_api_key',
        ratelimit: '"minute";r=2;t=30',
      });

      const account = { limit: 5, resetAt: MINUTE_END, policy: policy(5, 100) };
      expectResponse(await call(ctx, key, { url: '/v1/pets/999999' }), {
        ...account,
        status: 404,
        remaining: 4,
        code: 'pet_not_found',
      });
      expectResponse(await call(ctx, key, { url: '/v1/nowhere' }), { ...account, status: 404, remaining: 3 });
      expectResponse(await call(ctx, key, { method: 'DELETE', url: '/v1/categories' }), {
        ...account,
        status: 405,
        remaining: 2,
        code: 'method_not_allowed',
      });
      expectResponse(await call(ctx, key, { method: 'POST', url: '/v1/pets', payload: {} }), {
        ...account,
        status: 400,
        remaining: 1,
        code: 'validation_failed',
      });
      expectResponse(await call(ctx, key), { ...account, status: 200, remaining: 0 });
      expectResponse(await call(ctx, key), {
        ...account,
        status: 429,
        remaining: 0,
        retryAfter: 30,
        code: 'rate_limited',
        ratelimit: `"minute";r=0;t=30, "day";r=95;t=${SECONDS_TO_MIDNIGHT}`,
      });
      // Outside /v1 nothing is counted or described.
      const health = await ctx.app.inject({ url: '/healthz' });
      assert.equal(health.statusCode, 200);
      assert.equal(health.headers['x-ratelimit-limit'], undefined);
    });

    test('minute window: the last millisecond of a minute and the first of the next', async (t) => {
      const ctx = await open(t, kind);
      const { key } = await ctx.createKey({ plan: 'enterprise', perMinute: 3, perDay: 1_000 });
      const start = Date.UTC(2026, 5, 15, 12, 6);
      ctx.clock.set(start - 1);
      for (let i = 0; i < 3; i++) {
        expectResponse(await call(ctx, key), { status: 200, limit: 3, remaining: 2 - i, resetAt: start });
      }
      expectResponse(await call(ctx, key), {
        status: 429,
        limit: 3,
        remaining: 0,
        resetAt: start,
        ratelimit: `"minute";r=0;t=1, "day";r=997;t=${(MIDNIGHT - start) / 1000 + 1}`,
        retryAfter: 1,
        code: 'rate_limited',
      });
      ctx.clock.advance(1);
      expectResponse(await call(ctx, key), { status: 200, limit: 3, remaining: 2, resetAt: start + 60_000 });
    });

    test('Retry-After is whole seconds, at least 1, never earlier than the reset, and waiting it is enough', async (t) => {
      const ctx = await open(t, kind);
      const { key } = await ctx.createKey({ plan: 'enterprise', perMinute: 1, perDay: 1_000 });
      const offsets = [0, 1, 500, 999, 1_000, 1_001, 29_999, 30_000, 59_000, 59_001, 59_999];
      let minuteStart = Date.UTC(2026, 5, 15, 13);
      for (const offset of offsets) {
        ctx.clock.set(minuteStart + offset);
        assert.equal((await call(ctx, key)).statusCode, 200);
        const res = await call(ctx, key);
        const resetAt = minuteStart + 60_000;
        const retryAfter = Number(header(res, 'retry-after'));
        assert.equal(res.statusCode, 429);
        assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1, `offset ${offset}: ${retryAfter}`);
        assert.ok(ctx.clock.now + retryAfter * 1000 >= resetAt, `offset ${offset}: ${retryAfter} is early`);
        assert.ok(
          ctx.clock.now + retryAfter * 1000 < resetAt + 1000,
          `offset ${offset}: ${retryAfter} is late`,
        );
        assert.equal(header(res, 'x-ratelimit-reset'), unix(resetAt));
        ctx.clock.advance(retryAfter * 1000);
        assert.equal((await call(ctx, key)).statusCode, 200, `offset ${offset}: waited Retry-After`);
        minuteStart += 2 * 60_000;
      }
    });

    test('day window: reset at UTC midnight; a full day is reported, not the minute', async (t) => {
      const ctx = await open(t, kind);
      const { key } = await ctx.createKey({ plan: 'enterprise', perMinute: 100, perDay: 5 });
      for (let i = 0; i < 5; i++) await call(ctx, key);
      // Exhausted at noon: Retry-After runs to midnight, not to the end of the (open) minute.
      expectResponse(await call(ctx, key), {
        status: 429,
        limit: 5,
        remaining: 0,
        resetAt: MIDNIGHT,
        ratelimit: `"minute";r=95;t=30, "day";r=0;t=${SECONDS_TO_MIDNIGHT}`,
        retryAfter: SECONDS_TO_MIDNIGHT,
        code: 'rate_limited',
      });
      ctx.clock.set(MIDNIGHT - 1);
      expectResponse(await call(ctx, key), {
        status: 429,
        limit: 5,
        remaining: 0,
        resetAt: MIDNIGHT,
        ratelimit: `"minute";r=100;t=1, "day";r=0;t=1`,
        retryAfter: 1,
        code: 'rate_limited',
      });
      ctx.clock.set(MIDNIGHT);
      expectResponse(await call(ctx, key), {
        status: 200,
        limit: 5,
        remaining: 4,
        resetAt: MIDNIGHT + 86_400_000,
        ratelimit: `"minute";r=99;t=60, "day";r=4;t=86400`,
      });
    });

    test('the quota is per account: its keys share it, other accounts are untouched', async (t) => {
      const ctx = await open(t, kind);
      const first = await ctx.createKey({ name: 'shared', plan: 'enterprise', perMinute: 4, perDay: 100 });
      // The harness's createKey re-applies a plan on every call; repeat the account's own.
      const second = await ctx.createKey({ name: 'shared', plan: 'enterprise', perMinute: 4, perDay: 100 });
      const other = await ctx.createKey({ name: 'other', plan: 'enterprise', perMinute: 4, perDay: 100 });
      const keys = [first.key, second.key, first.key, second.key];
      for (const [i, key] of keys.entries()) {
        expectResponse(await call(ctx, key), {
          status: 200,
          limit: 4,
          remaining: 3 - i,
          resetAt: MINUTE_END,
        });
      }
      assert.equal((await call(ctx, first.key)).statusCode, 429);
      assert.equal((await call(ctx, second.key)).statusCode, 429);
      expectResponse(await call(ctx, other.key), {
        status: 200,
        limit: 4,
        remaining: 3,
        resetAt: MINUTE_END,
      });
    });

    test('rejected requests consume no quota, in either window', async (t) => {
      const ctx = await open(t, kind, { banThresholdFactor: 100 });
      const { key } = await ctx.createKey({ plan: 'enterprise', perMinute: 2, perDay: 5 });
      for (let i = 0; i < 2; i++) assert.equal((await call(ctx, key)).statusCode, 200);
      // Rejected by the minute: the day stays at 3 left.
      for (let i = 0; i < 5; i++) {
        const res = await call(ctx, key);
        assert.equal(res.statusCode, 429);
        assert.equal(header(res, 'ratelimit'), `"minute";r=0;t=30, "day";r=3;t=${SECONDS_TO_MIDNIGHT}`);
      }
      ctx.clock.set(MINUTE_END);
      for (let i = 0; i < 2; i++) assert.equal((await call(ctx, key)).statusCode, 200);
      ctx.clock.set(MINUTE_END + 60_000);
      assert.equal((await call(ctx, key)).statusCode, 200);
      // Rejected by the day: the minute stays at 1 left.
      for (let i = 0; i < 5; i++) {
        const res = await call(ctx, key);
        assert.equal(res.statusCode, 429);
        assert.equal(header(res, 'x-ratelimit-limit'), '5');
        assert.match(header(res, 'ratelimit'), /^"minute";r=1;t=60, "day";r=0;t=\d+$/);
      }
    });

    test('concurrency is exact: of 400 parallel requests against 200 remaining, exactly 200 succeed', async (t) => {
      const ctx = await open(t, kind, { banThresholdFactor: 1000 });
      const { key } = await ctx.createKey({ plan: 'enterprise', perMinute: 250, perDay: 100_000 });
      for (let i = 0; i < 50; i++) await call(ctx, key);
      const responses = await Promise.all(Array.from({ length: 400 }, () => call(ctx, key)));
      const ok = responses.filter((r) => r.statusCode === 200);
      const limited = responses.filter((r) => r.statusCode === 429);
      assert.equal(ok.length, 200);
      assert.equal(limited.length, 200);
      // Each remaining value handed out exactly once: no two requests saw the same count.
      const remaining = ok.map((r) => Number(header(r, 'x-ratelimit-remaining'))).sort((a, b) => a - b);
      assert.deepEqual(
        remaining,
        Array.from({ length: 200 }, (_, i) => i),
      );
      for (const r of limited) assert.equal(r.json().code, 'rate_limited');
      expectResponse(await call(ctx, key), {
        status: 429,
        limit: 250,
        remaining: 0,
        resetAt: MINUTE_END,
        ratelimit: `"minute";r=0;t=30, "day";r=99750;t=${SECONDS_TO_MIDNIGHT}`,
        retryAfter: 30,
      });
    });

    test('concurrency is exact on the day window too', async (t) => {
      const ctx = await open(t, kind, { banThresholdFactor: 1000 });
      const { key } = await ctx.createKey({ plan: 'enterprise', perMinute: 1_000, perDay: 137 });
      const responses = await Promise.all(Array.from({ length: 300 }, () => call(ctx, key)));
      assert.equal(responses.filter((r) => r.statusCode === 200).length, 137);
      assert.equal(responses.filter((r) => r.statusCode === 429).length, 163);
    });

    describe('unauthenticated bucket', () => {
      test('requests without a valid key are limited per client address', async (t) => {
        const ctx = await open(t, kind, { unauthenticatedPerMinute: 3 });
        const { key } = await ctx.createKey({ plan: 'enterprise', perMinute: 10, perDay: 100 });
        const revoked = await ctx.createKey({ plan: 'enterprise', perMinute: 10, perDay: 100 });
        await ctx.accounts.revokeKey(revoked.id, ctx.clock.now);
        const ip = { limit: 3, resetAt: MINUTE_END, policy: policy(3) };
        // Missing, malformed, unknown: all counted against 127.0.0.1.
        expectResponse(await call(ctx, undefined), { ...ip, status: 401, remaining: 2 });
        expectResponse(await call(ctx, 'garbage'), { ...ip, status: 401, remaining: 1 });
        expectResponse(await call(ctx, revoked.key), {
          ...ip,
          status: 401,
          remaining: 0,
          code: 'revoked_api_key',
        });
        // Key guessing is now slow: whatever key is tried, the answer is 429 before any lookup verdict.
        for (const guess of [undefined, generateApiKey(), 'garbage', revoked.key]) {
          expectResponse(await call(ctx, guess), {
            ...ip,
            status: 429,
            remaining: 0,
            retryAfter: 30,
            code: 'rate_limited',
          });
        }
        // Never banned: the bucket only rate-limits.
        for (let i = 0; i < 20; i++) assert.equal((await call(ctx, undefined)).json().code, 'rate_limited');
        // A valid key is counted against its account, not the address.
        expectResponse(await call(ctx, key), { status: 200, limit: 10, remaining: 9, resetAt: MINUTE_END });
        // Another address has its own bucket.
        expectResponse(await call(ctx, undefined, { remoteAddress: '192.0.2.7' }), {
          ...ip,
          status: 401,
          remaining: 2,
        });
        // And a new minute refills the bucket.
        ctx.clock.set(MINUTE_END);
        expectResponse(await call(ctx, undefined), {
          ...ip,
          status: 401,
          remaining: 2,
          resetAt: MINUTE_END + 60_000,
        });
      });

      test('X-Forwarded-For is ignored unless trustProxy is configured', async (t) => {
        const ctx = await open(t, kind, { unauthenticatedPerMinute: 3, trustProxy: false });
        for (const [i, client] of ['203.0.113.1', '203.0.113.2', '203.0.113.3'].entries()) {
          const res = await call(ctx, undefined, { headers: { 'x-forwarded-for': client } });
          assert.equal(header(res, 'x-ratelimit-remaining'), String(2 - i));
        }
        const spoofed = await call(ctx, undefined, { headers: { 'x-forwarded-for': '203.0.113.4' } });
        assert.equal(spoofed.statusCode, 429);
      });

      test('X-Forwarded-For from a trusted proxy names the client; from anyone else it is ignored', async (t) => {
        const ctx = await open(t, kind, { unauthenticatedPerMinute: 3, trustProxy: ['127.0.0.1'] });
        const viaProxy = (client: string) => call(ctx, undefined, { headers: { 'x-forwarded-for': client } });
        assert.equal(header(await viaProxy('203.0.113.1'), 'x-ratelimit-remaining'), '2');
        assert.equal(header(await viaProxy('203.0.113.2'), 'x-ratelimit-remaining'), '2');
        assert.equal(header(await viaProxy('203.0.113.1'), 'x-ratelimit-remaining'), '1');
        // A client that is not the trusted proxy cannot pick its bucket by sending the header itself.
        const direct = (client: string) =>
          call(ctx, undefined, { remoteAddress: '198.51.100.9', headers: { 'x-forwarded-for': client } });
        assert.equal(header(await direct('203.0.113.50'), 'x-ratelimit-remaining'), '2');
        assert.equal(header(await direct('203.0.113.51'), 'x-ratelimit-remaining'), '1');
        assert.equal(header(await direct('203.0.113.52'), 'x-ratelimit-remaining'), '0');
      });
    });

    describe('temporary ban', () => {
      /** Exhausts a 3/min account and sends `rejected` more requests, all rate_limited. */
      async function exhaust(ctx: TestContext, key: string, rejected: number): Promise<void> {
        for (let i = 0; i < 3; i++) assert.equal((await call(ctx, key)).statusCode, 200);
        for (let i = 0; i < rejected; i++) assert.equal((await call(ctx, key)).json().code, 'rate_limited');
      }

      test('more rejected requests than the per-minute quota within one minute: banned for banSeconds', async (t) => {
        const ctx = await open(t, kind, { banSeconds: 120 });
        const { key } = await ctx.createKey({ plan: 'enterprise', perMinute: 3, perDay: 1_000 });
        await exhaust(ctx, key, 3);
        const bannedAt = ctx.clock.now;
        expectResponse(await call(ctx, key), {
          status: 429,
          limit: 3,
          remaining: 0,
          resetAt: bannedAt + 120_000,
          policy: policy(3, 1_000),
          retryAfter: 120,
          code: 'temporarily_banned',
        });
        // A new minute does not lift it, and Retry-After counts down the ban.
        ctx.clock.advance(61_000);
        expectResponse(await call(ctx, key), {
          status: 429,
          limit: 3,
          remaining: 0,
          resetAt: bannedAt + 120_000,
          retryAfter: 59,
          code: 'temporarily_banned',
        });
        ctx.clock.set(bannedAt + 119_999);
        assert.equal(header(await call(ctx, key), 'retry-after'), '1');
        ctx.clock.set(bannedAt + 120_000);
        // Requests while banned consumed nothing: the full minute quota is there.
        expectResponse(await call(ctx, key), {
          status: 200,
          limit: 3,
          remaining: 2,
          resetAt: Date.UTC(2026, 5, 15, 12, 3),
        });
      });

      test('the ban lasts 15 minutes by default', async (t) => {
        const ctx = await open(t, kind);
        const { key } = await ctx.createKey({ plan: 'enterprise', perMinute: 3, perDay: 1_000 });
        await exhaust(ctx, key, 3);
        const res = await call(ctx, key);
        assert.equal(res.json().code, 'temporarily_banned');
        assert.equal(header(res, 'retry-after'), '900');
      });

      test('the threshold scales with banThresholdFactor, and rejections in different minutes do not add up', async (t) => {
        const ctx = await open(t, kind, { banThresholdFactor: 2 });
        const { key } = await ctx.createKey({ plan: 'enterprise', perMinute: 3, perDay: 1_000 });
        await exhaust(ctx, key, 6);
        ctx.clock.set(MINUTE_END);
        await exhaust(ctx, key, 6);
        assert.equal((await call(ctx, key)).json().code, 'temporarily_banned');
      });

      test('accounts unban (storage.liftBan) lifts it at once; the rejected count restarts', async (t) => {
        const ctx = await open(t, kind);
        const { key } = await ctx.createKey({
          name: 'hammer',
          plan: 'enterprise',
          perMinute: 3,
          perDay: 1_000,
        });
        await exhaust(ctx, key, 3);
        assert.equal((await call(ctx, key)).json().code, 'temporarily_banned');
        ctx.clock.advance(1_000);
        assert.equal(await ctx.accounts.liftBan('hammer', ctx.clock.now), true);
        assert.equal(await ctx.accounts.liftBan('nobody', ctx.clock.now), false);
        ctx.clock.advance(1);
        // Not banned any more; the minute is still used up, and three more rejections are tolerated again.
        for (let i = 0; i < 3; i++) {
          const res = await call(ctx, key);
          assert.equal(res.json().code, 'rate_limited');
          assert.equal(header(res, 'retry-after'), '29');
        }
        assert.equal((await call(ctx, key)).json().code, 'temporarily_banned');
        // A ban set after the unban is not void; lifting it again works.
        await ctx.accounts.liftBan('hammer', ctx.clock.now);
        ctx.clock.set(MINUTE_END);
        expectResponse(await call(ctx, key), {
          status: 200,
          limit: 3,
          remaining: 2,
          resetAt: MINUTE_END + 60_000,
        });
      });

      test('a client that waits Retry-After after each 429 is never banned; one that ignores it is', async (t) => {
        const ctx = await open(t, kind);
        const polite = await ctx.createKey({ plan: 'enterprise', perMinute: 3, perDay: 20 });
        let successes = 0;
        let waits = 0;
        while (successes < 45) {
          const res = await call(ctx, polite.key);
          if (res.statusCode === 200) {
            successes++;
            ctx.clock.advance(10);
            continue;
          }
          assert.equal(res.statusCode, 429);
          assert.equal(res.json().code, 'rate_limited');
          waits++;
          ctx.clock.advance(Number(header(res, 'retry-after')) * 1000);
          // Waiting exactly Retry-After is always enough.
          assert.equal((await call(ctx, polite.key)).statusCode, 200);
          successes++;
        }
        assert.ok(waits >= 10, `waits ${waits}`);
        assert.ok(ctx.clock.now > MIDNIGHT + 86_400_000, 'crossed two midnights');

        const rude = await ctx.createKey({ plan: 'enterprise', perMinute: 3, perDay: 20 });
        const codes: string[] = [];
        for (let i = 0; i < 10; i++) {
          const res = await call(ctx, rude.key);
          if (res.statusCode === 429) codes.push(res.json().code);
        }
        assert.deepEqual(codes, [
          'rate_limited',
          'rate_limited',
          'rate_limited',
          'temporarily_banned',
          'temporarily_banned',
          'temporarily_banned',
          'temporarily_banned',
        ]);
      });
    });
  });

  describe(`counter store contract [${kind.name}]`, () => {
    const NOW = T0;
    const request = (overrides: Partial<ConsumeRequest> = {}): ConsumeRequest => ({
      subject: 'a:1',
      windows: [{ id: 'm:1', limit: 3, ttlMs: 120_000 }],
      rejectedId: 'x:1',
      banThreshold: Infinity,
      banMs: 60_000,
      now: NOW,
      banLiftedAt: null,
      ...overrides,
    });

    async function store(t: NodeTestContext): Promise<CounterStore> {
      const s = await kind.create();
      t.after(() => s.close());
      return s;
    }

    test('kind and health', async (t) => {
      const s = await store(t);
      assert.equal(s.kind, kind.name);
      assert.equal(s.healthy(), true);
    });

    test('every window below its limit: all incremented; otherwise none, and counts are unchanged', async (t) => {
      const s = await store(t);
      const windows = [
        { id: 'm:1', limit: 5, ttlMs: 120_000 },
        { id: 'd:1', limit: 3, ttlMs: 120_000 },
      ];
      for (let i = 1; i <= 3; i++)
        assert.deepEqual(await s.consume(request({ windows })), {
          allowed: true,
          counts: [i, i],
          bannedUntil: null,
        });
      for (let i = 0; i < 3; i++)
        assert.deepEqual(await s.consume(request({ windows })), {
          allowed: false,
          counts: [3, 3],
          bannedUntil: null,
        });
      // Same minute, next day: the minute shows no trace of the rejections.
      const nextDay = [windows[0]!, { id: 'd:2', limit: 3, ttlMs: 120_000 }];
      assert.deepEqual(await s.consume(request({ windows: nextDay })), {
        allowed: true,
        counts: [4, 1],
        bannedUntil: null,
      });
      // Subjects are independent.
      assert.deepEqual(await s.consume(request({ subject: 'ip:192.0.2.1', windows })), {
        allowed: true,
        counts: [1, 1],
        bannedUntil: null,
      });
    });

    test(
      'parallel consumers get exactly the remaining quota' +
        (kind.twin ? ', across two store instances' : ''),
      async (t) => {
        const first = await store(t);
        const second = kind.twin ? await kind.twin(first) : first;
        if (second !== first) t.after(() => second.close());
        const windows = [
          { id: 'm:9', limit: 1_000, ttlMs: 120_000 },
          { id: 'd:9', limit: 123, ttlMs: 120_000 },
        ];
        const results = await Promise.all(
          Array.from({ length: 500 }, (_, i) => (i % 2 === 0 ? first : second).consume(request({ windows }))),
        );
        const allowed = results.filter((r) => r.allowed);
        assert.equal(allowed.length, 123);
        assert.deepEqual(
          allowed.map((r) => r.counts[1]).sort((a, b) => a! - b!),
          Array.from({ length: 123 }, (_, i) => i + 1),
        );
        for (const r of results.filter((x) => !x.allowed)) assert.deepEqual(r.counts, [123, 123]);
        // Each instance sees the shared total.
        assert.deepEqual((await second.consume(request({ windows }))).counts, [123, 123]);
        assert.deepEqual((await first.consume(request({ windows }))).counts, [123, 123]);
      },
    );

    test('ban: set once rejections exceed the threshold, ends at bannedUntil, counts frozen meanwhile', async (t) => {
      const s = await store(t);
      const ban = { banThreshold: 2, banMs: 60_000 };
      for (let i = 0; i < 3; i++) await s.consume(request(ban));
      assert.deepEqual(await s.consume(request(ban)), { allowed: false, counts: [3], bannedUntil: null });
      assert.deepEqual(await s.consume(request(ban)), { allowed: false, counts: [3], bannedUntil: null });
      // Only the request that starts the ban says so (it is logged and counted once); later ones do not.
      assert.deepEqual(await s.consume(request(ban)), {
        allowed: false,
        counts: [3],
        bannedUntil: NOW + 60_000,
        event: 'banned',
      });
      // Banned even where a window would allow (a new minute), and nothing is counted.
      const later = {
        ...ban,
        now: NOW + 59_999,
        windows: [{ id: 'm:2', limit: 3, ttlMs: 120_000 }],
        rejectedId: 'x:2',
      };
      assert.deepEqual(await s.consume(request(later)), {
        allowed: false,
        counts: [0],
        bannedUntil: NOW + 60_000,
      });
      assert.deepEqual(await s.consume(request({ ...later, now: NOW + 60_000 })), {
        allowed: true,
        counts: [1],
        bannedUntil: null,
      });
    });

    test('ban: banLiftedAt at or after the ban voids it and restarts the rejected count; before it does not', async (t) => {
      const s = await store(t);
      const ban = { banThreshold: 1, banMs: 60_000 };
      for (let i = 0; i < 5; i++) await s.consume(request(ban));
      assert.equal((await s.consume(request(ban))).bannedUntil, NOW + 60_000);
      assert.equal(
        (await s.consume(request({ ...ban, now: NOW + 5, banLiftedAt: NOW - 1 }))).bannedUntil,
        NOW + 60_000,
      );
      const lifted = { ...ban, now: NOW + 10, banLiftedAt: NOW + 5 };
      // The request that finds the ban lifted says so, once.
      assert.deepEqual(await s.consume(request(lifted)), {
        allowed: false,
        counts: [3],
        bannedUntil: null,
        event: 'unbanned',
      });
      assert.equal((await s.consume(request(lifted))).bannedUntil, NOW + 10 + 60_000);
    });

    test('banThreshold Infinity never bans', async (t) => {
      const s = await store(t);
      for (let i = 0; i < 3; i++) await s.consume(request());
      for (let i = 0; i < 50; i++) assert.equal((await s.consume(request())).bannedUntil, null);
    });

    test('counters and bans expire on their own after their TTL (real time)', async (t) => {
      const s = await store(t);
      const short = { windows: [{ id: 'm:t', limit: 1, ttlMs: 30 }], banThreshold: 0, banMs: 30 };
      assert.equal((await s.consume(request(short))).allowed, true);
      assert.equal((await s.consume(request(short))).bannedUntil, NOW + 30);
      // The caller's clock stands still; only the stores' real-time expiry can clear these.
      await kind.passRealTime(s, 30);
      assert.deepEqual(await s.consume(request(short)), { allowed: true, counts: [1], bannedUntil: null });
    });
  });
}
