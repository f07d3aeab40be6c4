/** Redis counter stores for tests: a unique key prefix per store, and its keys deleted on close. */
import type { FastifyBaseLogger } from 'fastify';
import { Redis } from 'ioredis';
import { RedisCounterStore } from '../../src/ratelimit/redis.js';
import { REDIS_URL, uniqueName } from '../helpers.js';

export interface TestRedisStoreOptions {
  /** Share another store's prefix to act as a second instance of the service on the same counters. */
  prefix?: string;
  url?: string;
  /** The production default (50 ms) unless given. */
  timeoutMs?: number;
  logger?: FastifyBaseLogger;
}

export async function createTestRedisStore(options: TestRedisStoreOptions = {}): Promise<RedisCounterStore> {
  const url = options.url ?? REDIS_URL;
  const prefix = options.prefix ?? `${uniqueName('rl')}:`;
  const store = new RedisCounterStore(url, {
    prefix,
    timeoutMs: options.timeoutMs ?? 50,
    logger: options.logger,
  });
  if (!(await store.ready(5000))) {
    await store.close();
    throw new Error(`Redis at ${url} did not become ready`);
  }
  const close = store.close.bind(store);
  store.close = async () => {
    await close();
    await deleteKeys(url, prefix);
  };
  return store;
}

/** Deletes every key under `prefix`. */
export async function deleteKeys(url: string, prefix: string): Promise<number> {
  return withClient(url, async (redis) => {
    const keys = await scanKeys(redis, prefix);
    return keys.length > 0 ? redis.unlink(...keys) : 0;
  });
}

/** Keys currently under `prefix`; shows that counting happened in Redis. */
export function listKeys(url: string, prefix: string): Promise<string[]> {
  return withClient(url, (redis) => scanKeys(redis, prefix));
}

async function withClient<T>(url: string, use: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 2000 });
  redis.on('error', () => {});
  try {
    await redis.connect();
    return await use(redis);
  } finally {
    redis.disconnect();
  }
}

/** SCAN, not KEYS, so a Redis shared with other test runs is never blocked. */
async function scanKeys(redis: Redis, prefix: string): Promise<string[]> {
  const match = `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`;
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', match, 'COUNT', 500);
    cursor = next;
    found.push(...keys);
  } while (cursor !== '0');
  return found;
}
