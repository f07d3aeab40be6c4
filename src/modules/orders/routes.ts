import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { hasScope } from '../../http/access.js';
import { ifMatch as ifMatchOf, notModified, preconditionFailed, strongEtag } from '../../http/conditional.js';
import { ApiError } from '../../http/errors.js';
import {
  IdempotencyHeaders,
  idempotencyInput,
  refusal,
  replay,
  type Recorded,
} from '../../http/idempotency/index.js';
import { PageCache, sendSerializedPage, serializePage } from '../../http/page-cache.js';
import { sendPage } from '../../http/paging.js';
import {
  errorResponses,
  etagHeader,
  linkHeader,
  locationHeader,
  rateLimitNote,
  replayedHeader,
} from '../../http/responses.js';
import { MAX_ID, ref } from '../../http/schemas.js';
import type { ModuleContext } from '../module.js';
import { orderRepository, type OrderAction, type OrderRecord, type Replayable } from './repository.js';
import {
  ActionHeaders,
  Inventory,
  ListOrdersQuery,
  NewOrder,
  Order,
  OrderIdParams,
  Orders,
} from './schemas.js';
import { renderOrder } from './decisions.js';
import { orderError } from './errors.js';
import { DEFAULT_MAX_OPEN_ORDERS } from './settings.js';
import { renderRows } from '../../http/row-guard.js';

/** Error responses with the descriptions of this module's own codes. */
function described(status: number, description: string) {
  return { [status]: { ...errorResponses(status)[status]!, description } };
}

const ETAG = { ETag: etagHeader('The order\'s version as a strong ETag (`"<n>"`); send it in If-Match.') };
const REPLAYED = {
  'Idempotent-Replayed': replayedHeader(
    '`true` when this response replays an earlier one (same Idempotency-Key).',
  ),
};

const ACTIONS: Record<
  OrderAction,
  { operationId: string; summary: string; scope: 'orders:manage' | 'orders:write'; description: string }
> = {
  approve: {
    operationId: 'approveOrder',
    summary: 'Approve an order',
    scope: 'orders:manage',
    description: '`placed` → `approved`; the pet stays `pending`.',
  },
  deliver: {
    operationId: 'deliverOrder',
    summary: 'Deliver an order',
    scope: 'orders:manage',
    description: '`approved` → `delivered`; the pet becomes `sold`.',
  },
  cancel: {
    operationId: 'cancelOrder',
    summary: 'Cancel an order',
    scope: 'orders:write',
    description:
      '`placed` or `approved` → `cancelled`; the pet becomes `available` again. Your own orders, or any with `orders:manage`.',
  },
};

/**
 * Whether a stored order may be replayed to this request: the caller's own order, or any with
 * `orders:manage`, the same rule as getOrder and the write itself.
 */
function orderVisible(request: FastifyRequest): (recorded: Recorded) => boolean {
  const accountId = request.principal!.account.id;
  const manager = hasScope(request, 'orders:manage');
  return ({ body }) => manager || (body as OrderRecord).accountId === accountId;
}

/** The refusals every idempotent write shares; returns the reply for a replay, throws for the others. */
function answerReplayOrRefusal<T extends { kind: string }>(
  request: FastifyRequest,
  reply: FastifyReply,
  result: Replayable<T>,
): T | FastifyReply {
  switch (result.kind) {
    case 'replayed': {
      const { status, body } = result as { status: number; body: OrderRecord };
      replay(reply, status).header('etag', strongEtag(body.version));
      if (status === 201) reply.header('location', `/v1/store/orders/${body.id}`);
      return reply.send(renderOrder(body, hasScope(request, 'orders:manage')));
    }
    case 'idempotency_mismatch':
      throw refusal('mismatch');
    case 'idempotency_in_progress':
      throw refusal('in_progress');
    default:
      return result as T;
  }
}

export const orderRoutes: FastifyPluginAsyncTypebox<ModuleContext> = async (
  app,
  { database, clock, config, cursors },
) => {
  const orders = database.repository(orderRepository);
  const pages = new PageCache();
  const maxOpen = config.maxOpenOrders ?? DEFAULT_MAX_OPEN_ORDERS;

  app.post(
    '/store/orders',
    {
      config: { access: { scopes: ['orders:write'] } },
      schema: {
        operationId: 'placeOrder',
        tags: ['store'],
        summary: 'Order a pet',
        description:
          'The pet must be `available`; in one transaction the order is created `placed` and the pet becomes ' +
          '`pending`. An account holds at most MAX_OPEN_ORDERS (default 5) open orders (`placed` or ' +
          `\`approved\`). Supports \`Idempotency-Key\`. ${rateLimitNote}`,
        headers: IdempotencyHeaders,
        body: NewOrder,
        response: {
          201: {
            ...ref(Order),
            headers: {
              Location: locationHeader('Path of the order: `/v1/store/orders/{id}`.'),
              ...ETAG,
              ...REPLAYED,
            },
          },
          ...errorResponses(400, 401, 403, 413, 415, 422),
          ...described(
            409,
            '`pet_not_available` (the pet is not `available`), `open_order_limit` (the account holds ' +
              'MAX_OPEN_ORDERS open orders), or `idempotency_in_progress`.',
          ),
        },
      },
    },
    async (request, reply) => {
      const { petId } = request.body;
      const accountId = request.principal!.account.id;
      const idempotency = idempotencyInput(request, 'placeOrder', [petId], clock, orderVisible(request));
      const result = answerReplayOrRefusal(
        request,
        reply,
        await orders.place({ accountId, petId, maxOpen, now: idempotency?.now ?? clock() }, idempotency),
      );
      if (!('kind' in result)) return result;
      switch (result.kind) {
        case 'placed':
          return reply
            .code(201)
            .header('location', `/v1/store/orders/${result.order.id}`)
            .header('etag', strongEtag(result.order.version))
            .send(renderOrder(result.order, hasScope(request, 'orders:manage')));
        case 'unknown_pet':
          throw new ApiError('validation_failed', {
            message: 'Invalid request: petId names no existing pet.',
            details: [{ field: 'petId', message: 'names no existing pet' }],
          });
        case 'pet_not_available':
          throw orderError('pet_not_available', `Pet ${petId} is not available for adoption.`);
        case 'open_order_limit':
          throw orderError(
            'open_order_limit',
            `This account already holds ${result.limit} open orders, the most it may; cancel or complete one first.`,
          );
      }
    },
  );

  app.get(
    '/store/orders',
    {
      config: { access: { scopes: ['orders:read'] } },
      schema: {
        operationId: 'listOrders',
        tags: ['store'],
        summary: 'List orders',
        description:
          "The caller's orders (every account's with `orders:manage`), ordered by id ascending, at most `limit` " +
          '(default 20), filtered by `status` and `petId`. When more exist, the response carries ' +
          '`Link: <…&cursor=…>; rel="next"`. Pages carry a weak ETag; `If-None-Match` answers 304. ' +
          rateLimitNote,
        querystring: ListOrdersQuery,
        response: {
          200: {
            ...Orders,
            headers: {
              Link: linkHeader('Present when another page exists: `<…>; rel="next"`.'),
              ETag: etagHeader('A weak ETag of the page; send it in If-None-Match.'),
            },
          },
          304: { type: 'null', description: 'Not modified: the page is unchanged since the ETag sent.' },
          ...errorResponses(400, 401, 403),
        },
      },
    },
    async (request, reply) => {
      const { limit = 20, status, petId, cursor } = request.query;
      const binding = { path: '/v1/store/orders', filters: { status, petId } };
      const afterId = cursor === undefined ? undefined : cursors.readId(binding, cursor);
      const manager = hasScope(request, 'orders:manage');
      const accountId = manager ? undefined : request.principal!.account.id;
      // Read before the page, so a page is never labelled newer than its data (see http/page-cache.ts).
      const version = orders.readVersion();
      // Whose orders (a manager sees every account's, with `account` shown) and which page.
      const key = `${accountId ?? '*'}|${limit}|${status ?? ''}|${petId ?? ''}|${afterId ?? 0}`;
      const cached =
        pages.get(version, key) ??
        (await pages.load(version, key, async () => {
          // Ids beyond what the service issues match nothing; no need to ask.
          const rows =
            petId !== undefined && petId > MAX_ID
              ? []
              : await orders.list({ accountId, status, petId, afterId, limit: limit + 1 });
          const page = sendPage(reply, rows, { ...binding, limit, cursors });
          return serializePage(
            reply,
            renderRows(request, page, (order) => renderOrder(order, manager)),
          );
        }));
      return sendSerializedPage(request, reply, cached);
    },
  );

  app.get(
    '/store/orders/:orderId',
    {
      config: { access: { scopes: ['orders:read'] } },
      schema: {
        operationId: 'getOrder',
        tags: ['store'],
        summary: 'Get an order',
        description:
          `Your own order, or any with \`orders:manage\`; another account's order answers 404. ` +
          `\`If-None-Match\` answers 304. ${rateLimitNote}`,
        params: OrderIdParams,
        response: {
          200: { ...ref(Order), headers: ETAG },
          304: { type: 'null', description: 'Not modified: the order is unchanged since the ETag sent.' },
          ...errorResponses(400, 401, 403),
          ...described(404, '`order_not_found`: no such order, or not yours.'),
        },
      },
    },
    async (request, reply) => {
      const id = request.params.orderId;
      const order = id <= MAX_ID ? await orders.get(id) : undefined;
      const manager = hasScope(request, 'orders:manage');
      if (!order || (!manager && order.accountId !== request.principal!.account.id)) {
        throw orderError('order_not_found', `No order ${id} visible to this account.`);
      }
      if (notModified(request, reply, strongEtag(order.version))) return reply;
      return renderOrder(order, manager);
    },
  );

  for (const [action, doc] of Object.entries(ACTIONS) as [OrderAction, (typeof ACTIONS)[OrderAction]][]) {
    app.post(
      `/store/orders/:orderId/${action}`,
      {
        config: { access: { scopes: [doc.scope] } },
        schema: {
          operationId: doc.operationId,
          tags: ['store'],
          summary: doc.summary,
          description:
            `${doc.description} No body (or \`{}\`). Any other move answers 409 \`invalid_transition\`. ` +
            `\`If-Match\` is honoured (412 when stale), and so is \`Idempotency-Key\`. ${rateLimitNote}`,
          params: OrderIdParams,
          headers: ActionHeaders,
          response: {
            200: { ...ref(Order), headers: { ...ETAG, ...REPLAYED } },
            ...errorResponses(400, 401, 403, 413, 415, 422),
            ...described(404, '`order_not_found`: no such order, or not yours.'),
            ...described(
              409,
              '`invalid_transition` (the order is not in a status this action applies to; the message names it), ' +
                'or `idempotency_in_progress`.',
            ),
            ...described(
              412,
              '`precondition_failed`: If-Match does not match; the current ETag is in `ETag`.',
            ),
          },
        },
      },
      async (request, reply) => {
        // No body schema (the document would then demand one): none, or an empty JSON object.
        const body = request.body as unknown;
        if (body !== undefined && !isEmptyObject(body)) {
          throw new ApiError('validation_failed', {
            message: 'Invalid request: this action takes no body (or {}).',
            details: [{ field: 'body', message: 'must be empty' }],
          });
        }
        const id = request.params.orderId;
        const manager = hasScope(request, 'orders:manage');
        const matches = ifMatchOf(request);
        const idempotency = idempotencyInput(request, doc.operationId, [id], clock, orderVisible(request));
        const result =
          id > MAX_ID
            ? ({ kind: 'not_found' } as const)
            : answerReplayOrRefusal(
                request,
                reply,
                await orders.transition(
                  {
                    id,
                    action,
                    accountId: manager ? undefined : request.principal!.account.id,
                    ifMatch: matches && ((version) => matches(strongEtag(version))),
                    now: idempotency?.now ?? clock(),
                  },
                  idempotency,
                ),
              );
        if (!('kind' in result)) return result;
        switch (result.kind) {
          case 'done':
            return reply
              .header('etag', strongEtag(result.order.version))
              .send(renderOrder(result.order, manager));
          case 'not_found':
            throw orderError('order_not_found', `No order ${id} visible to this account.`);
          case 'precondition_failed':
            throw preconditionFailed(strongEtag(result.version));
          case 'invalid_transition':
            throw orderError(
              'invalid_transition',
              `Order ${id} is ${result.status}; it cannot be ${PAST[action]}.`,
            );
        }
      },
    );
  }

  app.get(
    '/store/inventory',
    {
      config: { access: { scopes: ['pets:read'] } },
      schema: {
        operationId: 'getInventory',
        tags: ['store'],
        summary: 'Count pets by status',
        description: `How many pets are \`available\`, \`pending\` and \`sold\` (zeros included). ${rateLimitNote}`,
        response: { 200: Inventory, ...errorResponses(401, 403) },
      },
    },
    () => orders.inventory(),
  );
};

function isEmptyObject(value: unknown): boolean {
  return (
    typeof value === 'object' && value !== null && !Array.isArray(value) && Object.keys(value).length === 0
  );
}

const PAST: Record<OrderAction, string> = { approve: 'approved', deliver: 'delivered', cancel: 'cancelled' };
