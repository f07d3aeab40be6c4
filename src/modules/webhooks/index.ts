import type { ApiModule } from '../module.js';
import { WebhookDispatcher } from './dispatcher.js';
import { webhookRoutes } from './routes.js';
import { NewWebhookEndpoint, WebhookDelivery, WebhookEndpoint, WebhookEndpointPatch } from './schemas.js';

export const webhooksModule: ApiModule = {
  name: 'webhooks',
  tag: { name: 'webhooks', description: 'Endpoints that receive signed events, and their deliveries.' },
  components: [NewWebhookEndpoint, WebhookEndpoint, WebhookEndpointPatch, WebhookDelivery],
  scopes: [{ name: 'webhooks:write', description: "manage the account's own webhook endpoints" }],
  routes: webhookRoutes,
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
