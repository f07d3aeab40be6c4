import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.js';
import { MemoryCounterStore } from './memory.js';
import type { CounterStore } from './store.js';

/**
 * Picks the counter store from REDIS_URL: unset means in-process counters. Redis keys are namespaced by
 * `installationId` (Storage.installationId), so deployments on different databases never share counts.
 */
export async function createCounterStore(
  config: Pick<Config, 'redisUrl' | 'redisPrefix' | 'redisTimeoutMs'>,
  options: { installationId: string; logger?: FastifyBaseLogger },
): Promise<CounterStore> {
  if (!config.redisUrl) return new MemoryCounterStore();
  const { RedisCounterStore } = await import('./redis.js');
  return new RedisCounterStore(config.redisUrl, {
    prefix: config.redisPrefix,
    installationId: options.installationId,
    timeoutMs: config.redisTimeoutMs,
    logger: options.logger,
  });
}
