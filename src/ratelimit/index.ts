import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.js';
import { MemoryCounterStore } from './memory.js';
import type { CounterStore } from './store.js';

/** Picks the counter store from REDIS_URL: unset means in-process counters. */
export async function createCounterStore(
  config: Pick<Config, 'redisUrl' | 'redisPrefix' | 'redisTimeoutMs'>,
  logger?: FastifyBaseLogger,
): Promise<CounterStore> {
  if (!config.redisUrl) return new MemoryCounterStore();
  const { RedisCounterStore } = await import('./redis.js');
  return new RedisCounterStore(config.redisUrl, {
    prefix: config.redisPrefix,
    timeoutMs: config.redisTimeoutMs,
    logger,
  });
}
