/** Webhook endpoint management: an account's own endpoints, their deliveries, manual retry. */
import { randomBytes } from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { hasScope } from '../../http/access.js';
import { ApiError } from '../../http/errors.js';
import { mergePatchBody, requireDeclaredBody } from '../../http/merge-patch.js';
import { decodeCursor, sendPage } from '../../http/paging.js';
import { errorResponses, linkHeader, locationHeader } from '../../http/responses.js';
import { MAX_ID, ref } from '../../http/schemas.js';
import type { ModuleContext } from '../module.js';
import { urlProblem } from './delivery.js';
import { webhookRepository, type DeliveryRecord, type EndpointRecord } from './repository.js';
import {
  DeliveryIdParams,
  EndpointIdParams,
  NewWebhookEndpoint,
  PageQuery,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointPatch,
  WebhookEndpointWithSecret,
  MAX_ERROR_LENGTH,
} from './schemas.js';

/** How long the previous secret keeps signing after a rotation. */
export const PREVIOUS_SECRET_MS = 24 * 3600_000;
const access = { access: { scopes: ['webhooks:write'] as const } };
const tags = ['webhooks'];
const LINK = { Link: linkHeader('Present when another page exists: `<…>; rel="next"`.') };

/** The Standard Webhooks secret format: `whsec_` and the base64 of 24 random bytes. */
export function newSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export function renderEndpoint(e: EndpointRecord): WebhookEndpoint {
  return {
    id: e.id,
    url: e.url,
    events: e.events,
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
    // Bounded as documented: an error text may quote a host name or a system message of any length.
    lastError:
      d.lastError === null || d.lastError.length <= MAX_ERROR_LENGTH
        ? d.lastError
        : `${d.lastError.slice(0, MAX_ERROR_LENGTH - 1)}…`,
    lastAttemptAt: iso(d.lastAttemptAt),
    nextAttemptAt: d.status === 'pending' ? iso(d.nextAttemptAt) : null,
    createdAt: new Date(d.createdAt).toISOString(),
  };
}

const notFound = (id: number) =>
  new ApiError('webhook_endpoint_not_found', `No webhook endpoint with id ${id}.`);

export const webhookRoutes: FastifyPluginAsyncTypebox<ModuleContext> = async (
  app,
  { database, clock, config },
) => {
  const repo = database.repository(webhookRepository);
  const allowHosts = config.webhookAllowHosts ?? [];

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
          'answer carries the signing `secret`, shown only here (and on rotation). `order.*` events reach the ' +
          "order's account, and every account whose creating key had `orders:manage`.",
        body: ref(NewWebhookEndpoint),
        response: {
          201: {
            ...WebhookEndpointWithSecret,
            headers: { Location: locationHeader('`/v1/webhook-endpoints/{id}`.') },
          },
          ...errorResponses(400, 401, 403, 413, 415),
        },
      },
    },
    async (request, reply) => {
      checkUrl(request.body.url);
      const secret = newSecret();
      const endpoint = await repo.createEndpoint(
        accountOf(request),
        {
          url: request.body.url,
          events: request.body.events,
          secret,
          ordersManage: hasScope(request, 'orders:manage'),
        },
        clock(),
      );
      return reply
        .code(201)
        .header('location', `/v1/webhook-endpoints/${endpoint.id}`)
        .send({ ...renderEndpoint(endpoint), secret });
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
      const afterId = cursor === undefined ? undefined : decodeCursor(cursor);
      const rows = await repo.listEndpoints({ accountId: accountOf(request), afterId, limit: limit + 1 });
      return sendPage(reply, rows, { path: '/v1/webhook-endpoints', limit }).map(renderEndpoint);
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
    async (request) => renderEndpoint(await own(accountOf(request), request.params.endpointId)),
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
          '`enabled`. Re-enabling a disabled endpoint resumes its pending deliveries.',
        params: EndpointIdParams,
        body: mergePatchBody(ref(WebhookEndpointPatch)),
        response: { 200: ref(WebhookEndpoint), ...errorResponses(400, 401, 403, 404, 413, 415) },
      },
    },
    async (request) => {
      const id = request.params.endpointId;
      const change = request.body as WebhookEndpointPatch;
      checkUrl(change.url);
      const updated =
        id <= MAX_ID ? await repo.updateEndpoint(accountOf(request), id, change, clock()) : undefined;
      if (!updated) throw notFound(id);
      return renderEndpoint(updated);
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
      return { ...renderEndpoint(rotated), secret };
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
      const endpoint = await own(accountOf(request), request.params.endpointId);
      const { limit = 20, cursor } = request.query;
      const afterId = cursor === undefined ? undefined : decodeCursor(cursor);
      const rows = await repo.listDeliveries({ endpointId: endpoint.id, afterId, limit: limit + 1 });
      const path = `/v1/webhook-endpoints/${endpoint.id}/deliveries`;
      return sendPage(reply, rows, { path, limit }).map(renderDelivery);
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
        description: '`202`: the delivery is pending and due now, whatever its status was.',
        params: DeliveryIdParams,
        response: { 202: ref(WebhookDelivery), ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => {
      const endpoint = await own(accountOf(request), request.params.endpointId);
      const { deliveryId } = request.params;
      const delivery =
        deliveryId <= MAX_ID ? await repo.retryDelivery(endpoint.id, deliveryId, clock()) : undefined;
      if (!delivery)
        throw new ApiError('delivery_not_found', `Endpoint ${endpoint.id} has no delivery ${deliveryId}.`);
      return reply.code(202).send(renderDelivery(delivery));
    },
  );
};
