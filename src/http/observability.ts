/**
 * Request ids, one log line per request, and Prometheus metrics. One line per request (not Fastify's
 * two) halves logging cost on the hot path; pino writes asynchronously in the server. The line keeps the
 * field names of Fastify's own request logging (`reqId`, `req`, `res`, `responseTime`, "request
 * completed"), so tools and habits made for Fastify logs work unchanged.
 *
 * Every metric the service defines is named `pet_adoption_…` (Node's default process metrics keep their
 * own names).
 */
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { trace, type SpanContext } from '@opentelemetry/api';
import type { FastifyInstance } from 'fastify';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Database } from '../db/database.js';
import type { CounterStore } from '../ratelimit/store.js';
import { tracingOn } from '../telemetry/context.js';

const SAFE_REQUEST_ID = /^[\w.:-]{1,128}$/;

/** The error codes that are rate-limit rejections, counted by reason. */
const REJECTIONS = new Set(['rate_limited', 'temporarily_banned', 'too_many_invalid_keys']);

declare module 'fastify' {
  interface FastifyRequest {
    /** The account of a valid key, once identified (also on its 429s): for the log line. */
    accountName: string | null;
  }
  interface FastifyReply {
    /** The catalogue code of an error answer (set by sendError): for the log line and metrics. */
    errorCode: string | null;
  }
  interface FastifyRequest {
    /** The request span's ids, for the log line (decorated only while tracing is on). */
    spanContext?: SpanContext;
  }
}

/** Honour a caller's X-Request-Id when it is short and harmless; otherwise mint one. */
export function requestId(incoming: string | string[] | undefined): string {
  return typeof incoming === 'string' && SAFE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
}

/**
 * The request latency buckets, up to the request timeout (30 s by default): a request that took 10 s is
 * counted as such, not lumped with every one above the last bucket.
 */
export const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export function createRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}

/** What other parts of the app count (access.ts: bans). */
export interface ServiceMetrics {
  bans: Counter;
  unbans: Counter;
}

export interface ObservabilityOptions {
  counterStore: CounterStore;
  database: Database;
}

export function registerObservability(
  app: FastifyInstance,
  registry: Registry,
  { counterStore, database }: ObservabilityOptions,
): ServiceMetrics {
  const registers = [registry];
  const duration = new Histogram({
    name: 'pet_adoption_http_request_duration_seconds',
    help: 'Time to answer HTTP requests, by route and status.',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const rejections = new Counter({
    name: 'pet_adoption_rate_limit_rejections_total',
    help: 'Requests refused by rate limiting, by reason (the error code) and by what was counted (account or address).',
    labelNames: ['reason', 'subject'] as const,
    registers,
  });
  const metrics: ServiceMetrics = {
    bans: new Counter({
      name: 'pet_adoption_rate_limit_bans_total',
      help: 'Temporary bans started (each counted once, on the instance whose request started it).',
      registers,
    }),
    unbans: new Counter({
      name: 'pet_adoption_rate_limit_unbans_total',
      help: 'Bans lifted early by `pet-adoption accounts unban`, as the service noticed them.',
      registers,
    }),
  };
  new Gauge({
    name: 'pet_adoption_rate_limit_store_state',
    help: 'The counter store in use: 1 for the current state (memory, redis, or memory-fallback while Redis is unreachable), 0 for the others.',
    labelNames: ['state'] as const,
    registers,
    collect() {
      const current =
        counterStore.kind === 'memory' ? 'memory' : counterStore.healthy() ? 'redis' : 'memory-fallback';
      for (const state of ['memory', 'redis', 'memory-fallback'])
        this.set({ state }, state === current ? 1 : 0);
    },
  });
  if (counterStore instanceof EventEmitter) {
    const fallbacks = new Counter({
      name: 'pet_adoption_rate_limit_store_fallbacks_total',
      help: 'Times Redis became unreachable and rate limits fell back to in-process counters.',
      registers,
    });
    counterStore.on('down', () => fallbacks.inc());
  }
  const poolStats = database.poolStats?.bind(database);
  // SQLite has no pool (one connection, used on the event loop), so these exist on PostgreSQL only.
  if (poolStats) {
    // Open connections by state, which add up to the pool's size; callers waiting for one are not
    // connections, so they have a gauge of their own.
    new Gauge({
      name: 'pet_adoption_db_pool_connections',
      help: 'PostgreSQL pool connections open, by state: idle or used (lent to a query or transaction).',
      labelNames: ['state'] as const,
      registers,
      collect() {
        const stats = poolStats();
        this.set({ state: 'idle' }, stats.idle);
        this.set({ state: 'used' }, stats.total - stats.idle);
      },
    });
    new Gauge({
      name: 'pet_adoption_db_pool_pending_requests',
      help: 'Callers waiting for a PostgreSQL pool connection (above 0: PG_POOL_SIZE is the bottleneck).',
      registers,
      collect() {
        this.set(poolStats().waiting);
      },
    });
  }

  app.decorateRequest('accountName', null);
  app.decorateReply('errorCode', null);

  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });
  const tracing = tracingOn();
  if (tracing) {
    // Runs inside the request span's context (@fastify/otel's onRequest hook comes first).
    app.decorateRequest('spanContext', undefined);
    app.addHook('onRequest', (request, _reply, done) => {
      request.spanContext = trace.getActiveSpan()?.spanContext();
      done();
    });
  }

  app.addHook('onResponse', (request, reply, done) => {
    const route = request.is404 ? 'unmatched' : (request.routeOptions.url ?? 'unmatched');
    duration.observe(
      { method: request.method, route, status_code: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
    const code = reply.errorCode;
    if (code !== null && REJECTIONS.has(code)) {
      rejections.inc({ reason: code, subject: request.accountName === null ? 'address' : 'account' });
    }
    const span = tracing ? request.spanContext : undefined;
    // Undefined fields are left out of the line; `reqId` comes from the request's child logger.
    request.log.info(
      {
        // Fastify's serializers make these {method, url, version, host, remoteAddress, remotePort} and
        // {statusCode}, as in its own request logging.
        req: request,
        res: reply,
        responseTime: Math.round(reply.elapsedTime * 10) / 10,
        route,
        userAgent: request.headers['user-agent'],
        code: code ?? undefined,
        account: request.accountName ?? undefined,
        // The names OpenTelemetry's own log correlation uses.
        trace_id: span?.traceId,
        span_id: span?.spanId,
      },
      'request completed',
    );
    done();
  });
  return metrics;
}
