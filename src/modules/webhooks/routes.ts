/** Webhook endpoint management: an account's own endpoints, their deliveries, manual retry. */
import { randomBytes } from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { FastifyRequest } from 'fastify';
import { hasScope } from '../../http/access.js';
import { ApiError } from '../../http/errors.js';
import { mergePatchBody, requireDeclaredBody } from '../../http/merge-patch.js';
import { sendPage } from '../../http/paging.js';
import { errorResponses, linkHeader, locationHeader } from '../../http/responses.js';
import { MAX_ID, ref } from '../../http/schemas.js';
import type { Scope } from '../accounts/index.js';
import type { ModuleContext } from '../module.js';
import { urlProblem } from './delivery.js';
import { webhookRepository, type EndpointRecord } from './repository.js';
import { eventsOf } from '../declared.js';
import { eventTypeNames } from '../events/index.js';
import {
  DeliveryIdParams,
  EndpointIdParams,
  PageQuery,
  webhookSchemas,
  type WebhookEndpointPatch,
} from './schemas.js';
import { webhookError } from './errors.js';
import { DEFAULT_MAX_WEBHOOK_ENDPOINTS } from './settings.js';
import { renderEndpoint, renderDelivery } from './render.js';
import { neededScopes } from './decisions.js';
import { renderRows } from '../../http/row-guard.js';

/** How long the previous secret keeps signing after a rotation. */
export const PREVIOUS_SECRET_MS = 24 * 3600_000;
const access = { access: { scopes: ['webhooks:write'] as const } };
const tags = ['webhooks'];
const LINK = { Link: linkHeader('Present when another page exists: `<…>; rel="next"`.') };

/** The Standard Webhooks secret format: `whsec_` and the base64 of 24 random bytes. */
export function newSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

/** Error responses with the descriptions of this module's own codes. */
function described(status: number, description: string) {
  return { [status]: { ...errorResponses(status)[status]!, description } };
}

const notFound = (id: number) =>
  webhookError('webhook_endpoint_not_found', `No webhook endpoint with id ${id}.`);

const exists = () =>
  webhookError('webhook_endpoint_exists', 'This account already has a webhook endpoint with this URL.');

/**
 * Pointing an endpoint somewhere else, changing what it receives or sending a delivery again hands over
 * what its events carry: the key must be able to read them itself, not only hold webhooks:write. 403
 * insufficient_scope naming the missing scopes, like the access hook's.
 */
function requireEventScopes(
  request: FastifyRequest,
  events: readonly string[],
  ordersManage: boolean,
  all: readonly string[],
): void {
  const granted = request.principal!.scopes;
  const missing = neededScopes(events, ordersManage, all).filter((any) => !any.some((s) => granted.has(s)));
  if (missing.length === 0) return;
  throw new ApiError('insufficient_scope', {
    message:
      `This API key lacks the scope ${missing.map((any) => any.map((s) => `"${s}"`).join(' or ')).join(', ')} ` +
      "that this endpoint's events need.",
    headers: {
      'www-authenticate': `Bearer realm="pet-adoption", error="insufficient_scope", scope="${missing
        .map((any) => any[0])
        .join(' ')}"`,
    },
  });
}

/** What the key may use, as recorded on the endpoint it sets up (sorted: the stored form is stable). */
const grantOf = (request: FastifyRequest): Scope[] => [...request.principal!.scopes].sort();

export const webhookRoutes: FastifyPluginAsyncTypebox<ModuleContext> = async (
  app,
  { database, clock, config, modules, cursors },
) => {
  const repo = database.repository(webhookRepository);
  // The event types of the served modules (ApiModule.events): what an endpoint may subscribe to, and `*`.
  const eventTypes = eventTypeNames(eventsOf(modules));
  const {
    NewWebhookEndpoint,
    WebhookEndpoint,
    WebhookEndpointPatch,
    WebhookDelivery,
    WebhookEndpointWithSecret,
  } = webhookSchemas(eventTypes);
  const requireScopes = (request: FastifyRequest, events: readonly string[], ordersManage: boolean) =>
    requireEventScopes(request, events, ordersManage, eventTypes);
  const allowHosts = config.webhookAllowHosts ?? [];
  const maxEndpoints = config.maxWebhookEndpoints ?? DEFAULT_MAX_WEBHOOK_ENDPOINTS;
  const live = (accountId: number) => repo.liveScopes(accountId, clock());

  const checkUrl = (url: string | undefined): void => {
    const problem = url === undefined ? undefined : urlProblem(url, allowHosts);
    if (problem) {
      throw new ApiError('validation_failed', {
        message: `Invalid request: url ${problem}.`,
        details: [{ field: 'url', message: problem }],
      });
    }
  };
  const accountOf = (request: { principal: { account: { id: number } } | null }): number =>
    request.principal!.account.id;
  const own = async (accountId: number, id: number): Promise<EndpointRecord> => {
    const endpoint = id <= MAX_ID ? await repo.getEndpoint(accountId, id) : undefined;
    if (!endpoint) throw notFound(id);
    return endpoint;
  };

  app.post(
    '/webhook-endpoints',
    {
      config: access,
      schema: {
        operationId: 'createWebhookEndpoint',
        tags,
        summary: 'Register a webhook endpoint',
        description:
          'Events of the given types are POSTed to `url`, signed per the Standard Webhooks specification. The ' +
          'answer carries the signing `secret`, shown only here (and on rotation). What the endpoint receives ' +
          "is decided when each event is fanned out, from the account's active keys: `pet.*` while one holds " +
          "`pets:read` or `events:read`, the account's own `order.*` while one holds `orders:read`, every " +
          "account's `order.*` (`scope: all`) only if this key has `orders:manage` and while an active key " +
          'holds it; never more than this key itself may read. An account holds at most MAX_WEBHOOK_ENDPOINTS ' +
          '(default 16) endpoints, each URL once.',
        body: ref(NewWebhookEndpoint),
        response: {
          201: {
            ...WebhookEndpointWithSecret,
            headers: { Location: locationHeader('`/v1/webhook-endpoints/{id}`.') },
          },
          ...errorResponses(400, 401, 403, 413, 415),
          ...described(
            409,
            '`webhook_endpoint_limit` (the account holds MAX_WEBHOOK_ENDPOINTS endpoints) or ' +
              '`webhook_endpoint_exists` (the account already has an endpoint with this URL).',
          ),
        },
      },
    },
    async (request, reply) => {
      checkUrl(request.body.url);
      const secret = newSecret();
      const accountId = accountOf(request);
      const created = await repo.createEndpoint(
        accountId,
        {
          url: request.body.url,
          events: request.body.events,
          secret,
          ordersManage: hasScope(request, 'orders:manage'),
          grantedScopes: grantOf(request),
        },
        clock(),
        maxEndpoints,
      );
      if (created.kind === 'exists') throw exists();
      if (created.kind === 'limit') {
        throw webhookError(
          'webhook_endpoint_limit',
          `This account already holds ${created.limit} webhook endpoints, the most it may; delete one first.`,
        );
      }
      const { endpoint } = created;
      return reply
        .code(201)
        .header('location', `/v1/webhook-endpoints/${endpoint.id}`)
        .send({ ...renderEndpoint(endpoint, await live(accountId)), secret });
    },
  );

  app.get(
    '/webhook-endpoints',
    {
      config: access,
      schema: {
        operationId: 'listWebhookEndpoints',
        tags,
        summary: "List the account's webhook endpoints",
        description: 'Ordered by id; paged with `limit` and `cursor` like every list (`Link: rel="next"`).',
        querystring: PageQuery,
        response: {
          200: {
            ...Type.Array(ref(WebhookEndpoint), { maxItems: 100 }),
            description: "A page of the account's webhook endpoints, ordered by id.",
            headers: LINK,
          },
          ...errorResponses(400, 401, 403),
        },
      },
    },
    async (request, reply) => {
      const { limit = 20, cursor } = request.query;
      const binding = { path: '/v1/webhook-endpoints' };
      const afterId = cursor === undefined ? undefined : cursors.readId(binding, cursor);
      const accountId = accountOf(request);
      const rows = await repo.listEndpoints({ accountId, afterId, limit: limit + 1 });
      const scopes = await live(accountId);
      return renderRows(request, sendPage(reply, rows, { ...binding, limit, cursors }), (e) =>
        renderEndpoint(e, scopes),
      );
    },
  );

  app.get(
    '/webhook-endpoints/:endpointId',
    {
      config: access,
      schema: {
        operationId: 'getWebhookEndpoint',
        tags,
        summary: 'Get a webhook endpoint',
        description: "One of the account's webhook endpoints, without its secret. Another account's: 404.",
        params: EndpointIdParams,
        response: {
          200: { ...ref(WebhookEndpoint), description: 'The endpoint.' },
          ...errorResponses(400, 401, 403, 404),
        },
      },
    },
    async (request) => {
      const accountId = accountOf(request);
      return renderEndpoint(await own(accountId, request.params.endpointId), await live(accountId));
    },
  );

  app.patch(
    '/webhook-endpoints/:endpointId',
    {
      config: access,
      preValidation: async (request) => requireDeclaredBody(request),
      schema: {
        operationId: 'updateWebhookEndpoint',
        tags,
        summary: 'Change a webhook endpoint',
        description:
          'A JSON Merge Patch (`application/merge-patch+json` or `application/json`) of `url`, `events` and ' +
          '`enabled`. Re-enabling a disabled endpoint resumes its pending deliveries. Changing `url` or ' +
          '`events` needs, besides `webhooks:write`, the scopes the resulting events need (`pet.*`: ' +
          '`pets:read` or `events:read`; `order.*`: `orders:read`, and `orders:manage` for an endpoint made ' +
          'with it); otherwise `403 insufficient_scope` naming them.',
        params: EndpointIdParams,
        body: mergePatchBody(ref(WebhookEndpointPatch)),
        response: {
          200: ref(WebhookEndpoint),
          ...errorResponses(400, 401, 403, 404, 413, 415),
          ...described(409, '`webhook_endpoint_exists`: another endpoint of the account has this URL.'),
        },
      },
    },
    async (request) => {
      const id = request.params.endpointId;
      const change = request.body as WebhookEndpointPatch;
      checkUrl(change.url);
      const accountId = accountOf(request);
      const endpoint = await own(accountId, id);
      const redirects = change.url !== undefined || change.events !== undefined;
      if (redirects) requireScopes(request, change.events ?? endpoint.events, endpoint.ordersManage);
      const updated = await repo.updateEndpoint(
        accountId,
        id,
        redirects ? { ...change, grantedScopes: grantOf(request) } : change,
        clock(),
      );
      if (updated === 'exists') throw exists();
      if (!updated) throw notFound(id);
      return renderEndpoint(updated, await live(accountId));
    },
  );

  app.delete(
    '/webhook-endpoints/:endpointId',
    {
      config: access,
      schema: {
        operationId: 'deleteWebhookEndpoint',
        tags,
        summary: 'Remove a webhook endpoint',
        description: '`204`; its pending deliveries are dropped.',
        params: EndpointIdParams,
        response: { 204: { description: 'Deleted.', type: 'null' }, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => {
      const id = request.params.endpointId;
      if (id > MAX_ID || !(await repo.deleteEndpoint(accountOf(request), id))) throw notFound(id);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/webhook-endpoints/:endpointId/rotate-secret',
    {
      config: access,
      schema: {
        operationId: 'rotateWebhookSecret',
        tags,
        summary: "Rotate an endpoint's signing secret",
        description:
          'Answers the new secret. For 24 hours deliveries carry two signatures (new and old, space-separated ' +
          'in `webhook-signature`), so receivers can switch without losing a delivery.',
        params: EndpointIdParams,
        response: { 200: WebhookEndpointWithSecret, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const id = request.params.endpointId;
      const secret = newSecret();
      const now = clock();
      const rotated =
        id <= MAX_ID
          ? await repo.rotateSecret(accountOf(request), id, secret, now + PREVIOUS_SECRET_MS, now)
          : undefined;
      if (!rotated) throw notFound(id);
      return { ...renderEndpoint(rotated, await live(accountOf(request))), secret };
    },
  );

  app.get(
    '/webhook-endpoints/:endpointId/deliveries',
    {
      config: access,
      schema: {
        operationId: 'listWebhookDeliveries',
        tags,
        summary: "List an endpoint's deliveries",
        description: 'Oldest first; attempts, status, last response code and time, next attempt. Paged.',
        params: EndpointIdParams,
        querystring: PageQuery,
        response: {
          200: {
            ...Type.Array(ref(WebhookDelivery), { maxItems: 100 }),
            description: "A page of the endpoint's deliveries, oldest first.",
            headers: LINK,
          },
          ...errorResponses(400, 401, 403, 404),
        },
      },
    },
    async (request, reply) => {
      const { limit = 20, cursor } = request.query;
      // Checked before the endpoint is looked up: a cursor not issued for this list costs no database work.
      const binding = { path: `/v1/webhook-endpoints/${request.params.endpointId}/deliveries` };
      const afterId = cursor === undefined ? undefined : cursors.readId(binding, cursor);
      const endpoint = await own(accountOf(request), request.params.endpointId);
      const rows = await repo.listDeliveries({ endpointId: endpoint.id, afterId, limit: limit + 1 });
      return renderRows(request, sendPage(reply, rows, { ...binding, limit, cursors }), renderDelivery);
    },
  );

  app.post(
    '/webhook-endpoints/:endpointId/deliveries/:deliveryId/retry',
    {
      config: access,
      schema: {
        operationId: 'retryWebhookDelivery',
        tags,
        summary: 'Send a delivery again now',
        description:
          '`202`: the delivery is pending and due now, whatever its status was. Needs, besides ' +
          "`webhooks:write`, the scopes the endpoint's events need (as for changing its `url`); otherwise " +
          '`403 insufficient_scope`. When it is sent, the account must still hold an active key that may ' +
          'read the event, or it fails as `not_authorized`.',
        params: DeliveryIdParams,
        response: { 202: ref(WebhookDelivery), ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => {
      const endpoint = await own(accountOf(request), request.params.endpointId);
      requireScopes(request, endpoint.events, endpoint.ordersManage);
      const { deliveryId } = request.params;
      const delivery =
        deliveryId <= MAX_ID ? await repo.retryDelivery(endpoint.id, deliveryId, clock()) : undefined;
      if (!delivery)
        throw webhookError('delivery_not_found', `Endpoint ${endpoint.id} has no delivery ${deliveryId}.`);
      return reply.code(202).send(renderDelivery(delivery));
    },
  );
};
