/**
 * Starts OpenTelemetry tracing: loaded only when tracing is requested (context.ts, tracingRequested), by
 * the `serve` command before it imports the server, so that nothing of it is loaded otherwise.
 *
 * The SDK is configured by the standard variables (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL
 * `http/protobuf` or `http/json`, OTEL_TRACES_SAMPLER, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, …).
 * The `pg` and `ioredis` instrumentations patch those modules as they are imported. The service is ES
 * modules, so that needs the documented loader hook (`@opentelemetry/instrumentation/hook.mjs`, registered
 * with `module.register`) in place before they are: they are imported only once a database or Redis is
 * opened, after this has run. The hook intercepts only the modules an instrumentation asked for
 * (import-in-the-middle's message channel), not every module of the service.
 */
import { register } from 'node:module';
import { FastifyOtelInstrumentation } from '@fastify/otel';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { createAddHookMessageChannel } from 'import-in-the-middle';
import { markTracingOn } from './context.js';

export interface Tracing {
  /** Exports the spans still buffered, then stops. */
  shutdown(): Promise<void>;
}

/** Probes and scrapes are not traced: one trace per probe would drown the requests. */
const UNTRACED = /^\/(healthz|readyz|metrics)(\?|$)/;

export async function startTracing(serviceVersion: string): Promise<Tracing> {
  const { registerOptions, waitForAllMessagesAcknowledged } = createAddHookMessageChannel();
  register('@opentelemetry/instrumentation/hook.mjs', import.meta.url, registerOptions);
  const env = process.env;
  const named =
    Boolean(env.OTEL_SERVICE_NAME) || /(^|,)\s*service\.name=/.test(env.OTEL_RESOURCE_ATTRIBUTES ?? '');
  const sdk = new NodeSDK({
    serviceName: named ? undefined : 'pet-adoption',
    // OTEL_RESOURCE_ATTRIBUTES still wins: the SDK merges what it detects over this.
    resource: defaultResource().merge(resourceFromAttributes({ 'service.version': serviceVersion })),
    // Traces only: metrics are Prometheus's (/metrics) and logs are pino's, unless asked for.
    metricReaders: env.OTEL_METRICS_EXPORTER ? undefined : [],
    logRecordProcessors: env.OTEL_LOGS_EXPORTER ? undefined : [],
    instrumentations: [
      new FastifyOtelInstrumentation({
        registerOnInitialization: true,
        ignorePaths: ({ url }) => UNTRACED.test(url),
        // One span per request: a span per hook, or one more around the handler, cost more than most
        // requests' own work (the handler span alone took a third of the list's throughput).
        instrumentHooks: false,
        instrumentHandler: false,
      }),
      // Statements and commands of a request only: the dispatcher's polling would otherwise open a trace
      // per poll.
      new PgInstrumentation({ requireParentSpan: true }),
      new IORedisInstrumentation({ requireParentSpan: true }),
    ],
  });
  sdk.start();
  // The hook must know the modules to patch before the server imports them.
  await waitForAllMessagesAcknowledged();
  markTracingOn();
  return { shutdown: () => sdk.shutdown() };
}
