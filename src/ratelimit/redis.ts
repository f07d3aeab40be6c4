// Placeholder until the Redis counter store lands.
import type { FastifyBaseLogger } from 'fastify';
import type { CounterStore } from './store.js';
export const RedisCounterStore = class {
  constructor(_url: string, _options: { prefix: string; timeoutMs: number; logger?: FastifyBaseLogger }) {
    throw new Error('Redis counter store is not implemented yet');
  }
} as unknown as new (url: string, options: { prefix: string; timeoutMs: number; logger?: FastifyBaseLogger }) => CounterStore;
