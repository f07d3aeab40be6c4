import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Registry } from 'prom-client';
import { Type } from 'typebox';
import type { Database } from '../db/database.js';
import type { CounterStore } from '../ratelimit/store.js';

const Health = Type.Object({ status: Type.String() });
const Readiness = Type.Object({
  status: Type.String({
    description:
      '`ready`, `unavailable`, `draining` while shutting down, or `overloaded` while requests are refused with `503 overloaded`.',
  }),
  storage: Type.String({ description: '`ok` or `unavailable`.' }),
  rateLimitStore: Type.String({
    description: '`memory`, `redis`, or `memory-fallback` while Redis is unreachable.',
  }),
});

export interface HealthRoutesOptions {
  database: Database;
  counterStore: CounterStore;
  registry: Registry;
  /** True once shutdown has begun: not ready, though still serving. */
  draining?: () => boolean;
  /** Whether /metrics is served here; false when it has a port of its own (METRICS_PORT). */
  metrics?: boolean;
  /** True while the instance refuses requests for overload: not ready, so balancers send them elsewhere. */
  shedding?: () => boolean;
}

/** Operational endpoints, outside /v1 and outside authentication. */
export const healthRoutes: FastifyPluginAsyncTypebox<HealthRoutesOptions> = async (
  app,
  { database, counterStore, registry, draining, shedding, metrics = true },
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
      const storageOk = await database.ping().then(
        () => true,
        () => false,
      );
      const rateLimitStore =
        counterStore.kind === 'memory' ? 'memory' : counterStore.healthy() ? 'redis' : 'memory-fallback';
      // A Redis outage degrades but does not stop the service (counters fall back to memory), so it stays ready.
      // Shutting down: balancers stop sending new work, while requests that still come are served.
      const isDraining = draining?.() ?? false;
      const isShedding = shedding?.() ?? false;
      const ready = storageOk && !isDraining && !isShedding;
      const status = ready ? 'ready' : !storageOk ? 'unavailable' : isDraining ? 'draining' : 'overloaded';
      return reply.code(ready ? 200 : 503).send({
        status,
        storage: storageOk ? 'ok' : 'unavailable',
        rateLimitStore,
      });
    },
  );

  if (!metrics) return;
  app.get('/metrics', { config, schema: hidden }, async (_req, reply) =>
    reply.type(registry.contentType).send(await registry.metrics()),
  );
};
