/**
 * A span per webhook delivery attempt, while tracing is on. The attempt is not part of the request that
 * wrote the event (that request was answered long before, and one event is delivered to several endpoints,
 * each perhaps many times): each attempt starts a trace of its own, linked to the writing request's span,
 * whose `traceparent` was stored with the event. The receiver gets the attempt's `traceparent`, so its own
 * spans join the attempt's trace.
 */
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { storedSpanContext, tracingOn } from '../../telemetry/context.js';
import type { AttemptResult } from './delivery.js';
import type { ClaimedDelivery } from './repository.js';

export async function traceAttempt(
  delivery: ClaimedDelivery,
  headers: Record<string, string>,
  send: () => Promise<AttemptResult>,
): Promise<AttemptResult> {
  if (!tracingOn()) return send();
  const linked = storedSpanContext(delivery.traceparent);
  const span = trace.getTracer('pet-adoption').startSpan(
    'webhook delivery attempt',
    {
      kind: SpanKind.CLIENT,
      root: true,
      links: linked ? [{ context: linked }] : [],
      attributes: {
        'http.request.method': 'POST',
        'url.full': delivery.url,
        'webhook.event_id': delivery.eventId,
        'webhook.delivery_id': delivery.id,
        'webhook.endpoint_id': delivery.endpointId,
        'webhook.attempt': delivery.attempts + 1,
      },
    },
    ROOT_CONTEXT,
  );
  const attempt = trace.setSpan(ROOT_CONTEXT, span);
  propagation.inject(attempt, headers);
  try {
    const result = await context.with(attempt, send);
    if (result.kind === 'answered') {
      span.setAttribute('http.response.status_code', result.statusCode);
      if (result.statusCode >= 300) span.setStatus({ code: SpanStatusCode.ERROR });
    } else {
      span.setStatus({ code: SpanStatusCode.ERROR, message: result.error });
    }
    return result;
  } catch (error) {
    span.setStatus({ code: SpanStatusCode.ERROR });
    throw error;
  } finally {
    span.end();
  }
}
