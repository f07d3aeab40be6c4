/** The API's view of webhook endpoints and deliveries (routes, the CLI). */
import type { Scope } from '../accounts/index.js';
import type { DeliveryRecord, EndpointRecord } from './repository.js';
import { orderScope } from './decisions.js';
import type { WebhookDelivery, WebhookEndpoint } from './schemas.js';

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** `live`: what the account's active keys may use now (it decides `scope`). */
export function renderEndpoint(e: EndpointRecord, live: ReadonlySet<Scope>): WebhookEndpoint {
  return {
    id: e.id,
    url: e.url,
    events: e.events,
    scope: orderScope(e, live),
    enabled: e.enabled,
    disabledReason: e.disabledReason,
    createdAt: new Date(e.createdAt).toISOString(),
    updatedAt: new Date(e.updatedAt).toISOString(),
  };
}

export function renderDelivery(d: DeliveryRecord): WebhookDelivery {
  return {
    id: d.id,
    eventId: d.eventId,
    eventType: d.eventType,
    status: d.status,
    attempts: d.attempts,
    lastStatusCode: d.lastStatusCode,
    lastError: d.lastError,
    lastAttemptAt: iso(d.lastAttemptAt),
    nextAttemptAt: d.status === 'pending' ? iso(d.nextAttemptAt) : null,
    createdAt: new Date(d.createdAt).toISOString(),
  };
}
