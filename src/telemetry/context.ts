/**
 * What the application asks of tracing, through `@opentelemetry/api` only: whether it is on, the trace
 * context to store with an event, a callback bound to the caller's context. The SDK and the
 * instrumentations (start.ts) are loaded only when tracing is requested; while it is off, every function
 * here returns at its first test, so the hot path pays one boolean read.
 */
import { context, propagation, ROOT_CONTEXT, trace, type SpanContext } from '@opentelemetry/api';

let on = false;

/**
 * Tracing is requested the way OpenTelemetry's SDKs read it: an OTLP endpoint, or a traces exporter other
 * than `none`; `OTEL_SDK_DISABLED=true` turns it off whatever else is set.
 */
export function tracingRequested(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const exporters = env.OTEL_TRACES_EXPORTER?.trim();
  if (exporters) return exporters.split(',').some((name) => !['none', 'null', ''].includes(name.trim()));
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}

/** Set once the SDK has started (start.ts). */
export function markTracingOn(): void {
  on = true;
}

export function tracingOn(): boolean {
  return on;
}

/** The active span's W3C `traceparent`, to store with what it caused (an event); null while tracing is off. */
export function currentTraceparent(): string | null {
  if (!on || trace.getActiveSpan() === undefined) return null;
  const carrier: { traceparent?: string } = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ?? null;
}

/** The span context a stored `traceparent` names (for a link), if it is well formed. */
export function storedSpanContext(traceparent: string | null): SpanContext | undefined {
  if (traceparent === null) return undefined;
  return trace.getSpanContext(propagation.extract(ROOT_CONTEXT, { traceparent }));
}

/**
 * `fn` bound to the caller's context: work queued for the end of the event-loop turn (a group commit) then
 * runs in the context of the request that queued it, not of the first one of the batch.
 */
export function bindToCaller<F extends (...args: never[]) => unknown>(fn: F): F {
  return on ? context.bind(context.active(), fn) : fn;
}

/** Runs `fn` outside any request's trace (background work a request only woke up). */
export function outsideRequest(fn: () => void): void {
  if (on) context.with(ROOT_CONTEXT, fn);
  else fn();
}
