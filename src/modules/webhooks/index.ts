import type { ApiModule } from '../module.js';
import { webhookScopes } from './scopes.js';
import { webhookErrors } from './errors.js';
import { webhookSettings } from './settings.js';
import { WebhookDispatcher } from './dispatcher.js';
import { webhookRoutes } from './routes.js';
import { eventsOf } from '../declared.js';
import { eventTypeNames } from '../events/index.js';
import { webhookSchemas } from './schemas.js';

export const webhooksModule: ApiModule = {
  name: 'webhooks',
  tag: { name: 'webhooks', description: 'Endpoints that receive signed events, and their deliveries.' },
  // Endpoints subscribe to the event types the served modules declare.
  components: (modules) => {
    const { NewWebhookEndpoint, WebhookEndpoint, WebhookEndpointPatch, WebhookDelivery } = webhookSchemas(
      eventTypeNames(eventsOf(modules)),
    );
    return [NewWebhookEndpoint, WebhookEndpoint, WebhookEndpointPatch, WebhookDelivery];
  },
  scopes: webhookScopes,
  routes: webhookRoutes,
  errors: webhookErrors.catalogue,
  settings: webhookSettings,
  background: ({ database, config, registry, logger, busy }) =>
    new WebhookDispatcher({
      database,
      allowHosts: config.webhookAllowHosts,
      pollMs: config.webhookPollMs,
      leaseMs: config.webhookLeaseMs,
      // The API keeps the loop busy: deliveries make room (the API comes first).
      busy,
      registry,
      logger,
    }),
};

// Its interface: what other modules, the app and the CLI use of it (they import no other file of it).
export { webhookRepository, type DeliveryRecord, type EndpointRecord } from './repository.js';
export { renderDelivery, renderEndpoint } from './render.js';
