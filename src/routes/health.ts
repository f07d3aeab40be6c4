import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Registry } from 'prom-client';
import type { CounterStore } from '../ratelimit/store.js';
import { Health, Readiness } from '../schemas.js';
import type { Storage } from '../storage/storage.js';

export interface HealthRoutesOptions {
  storage: Storage;
  counterStore: CounterStore;
  registry: Registry;
  /** True once shutdown has begun: not ready, though still serving. */
  draining?: () => boolean;
}

/** Operational endpoints, outside /v1 and outside authentication. */
export const healthRoutes: FastifyPluginAsyncTypebox<HealthRoutesOptions> = async (
  app,
  { storage, counterStore, registry, draining },
) => {
  const hidden = { hide: true, tags: ['operations'] };
  const config = { access: 'operations' } as const;

  app.get('/healthz', { config, schema: { ...hidden, response: { 200: Health } } }, () => ({
    status: 'ok',
  }));

  app.get(
    '/readyz',
    { config, schema: { ...hidden, response: { 200: Readiness, 503: Readiness } } },
    async (_req, reply) => {
      const storageOk = await storage.ping().then(
        () => true,
        () => false,
      );
      const rateLimitStore =
        counterStore.kind === 'memory' ? 'memory' : counterStore.healthy() ? 'redis' : 'memory-fallback';
      // A Redis outage degrades but does not stop the service (counters fall back to memory), so it stays ready.
      // Shutting down: balancers stop sending new work, while requests that still come are served.
      const ready = storageOk && !draining?.();
      return reply.code(ready ? 200 : 503).send({
        status: ready ? 'ready' : storageOk ? 'draining' : 'unavailable',
        storage: storageOk ? 'ok' : 'unavailable',
        rateLimitStore,
      });
    },
  );

  app.get('/metrics', { config, schema: hidden }, async (_req, reply) =>
    reply.type(registry.contentType).send(await registry.metrics()),
  );
};
