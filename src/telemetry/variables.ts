/**
 * The OpenTelemetry variables an operator sets. The SDK reads them itself (start.ts hands it no settings
 * of these), so they are not in config.ts's table; this list is what `.env.example` and docs/operations.md
 * show of them, every one unset by default (setting an endpoint or an exporter turns tracing on).
 */
import type { Variable } from '../config.js';

export const TRACING_VARIABLES: readonly Variable[] = [
  {
    name: 'OTEL_EXPORTER_OTLP_ENDPOINT',
    default: undefined,
    description:
      'OpenTelemetry collector, e.g. http://collector:4318 (OTLP); set, it turns tracing on (off by default).',
  },
  {
    name: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
    default: undefined,
    description:
      'The traces URL itself (…/v1/traces), instead of OTEL_EXPORTER_OTLP_ENDPOINT; turns tracing on too.',
  },
  {
    name: 'OTEL_EXPORTER_OTLP_PROTOCOL',
    default: undefined,
    description: 'http/protobuf (the default), http/json or grpc.',
  },
  {
    name: 'OTEL_EXPORTER_OTLP_HEADERS',
    default: undefined,
    description: 'key=value pairs, comma-separated, sent with every export (a hosted collector’s API key).',
  },
  {
    name: 'OTEL_SERVICE_NAME',
    default: undefined,
    description: 'The service.name of every span; unset: pet-adoption.',
  },
  {
    name: 'OTEL_RESOURCE_ATTRIBUTES',
    default: undefined,
    description: 'key=value pairs, comma-separated, on every span (deployment.environment.name=production).',
  },
  {
    name: 'OTEL_TRACES_SAMPLER',
    default: undefined,
    description: 'parentbased_always_on (the default), parentbased_traceidratio, always_off, …',
  },
  {
    name: 'OTEL_TRACES_SAMPLER_ARG',
    default: undefined,
    description: 'The ratio of requests traced for the *traceidratio samplers, 0 to 1 (e.g. 0.1).',
  },
  {
    name: 'OTEL_TRACES_EXPORTER',
    default: undefined,
    description: 'otlp turns tracing on (to http://localhost:4318 without an endpoint); none turns it off.',
  },
  {
    name: 'OTEL_SDK_DISABLED',
    default: undefined,
    description: 'true: tracing off, whatever else is set.',
  },
  {
    name: 'OTEL_BSP_SCHEDULE_DELAY',
    default: undefined,
    description: 'Milliseconds between two exports of finished spans; unset: 5000.',
  },
];
