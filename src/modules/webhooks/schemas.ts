/** Webhook endpoints and deliveries (DESIGN 4.4): components `WebhookEndpoint` and `WebhookDelivery`. */
import { Type, type Static } from 'typebox';
import { pageQuery } from '../../http/paging.js';

export const EVENT_TYPES = [
  'pet.created',
  'pet.updated',
  'pet.deleted',
  'order.placed',
  'order.approved',
  'order.delivered',
  'order.cancelled',
] as const;

const EventTypes = Type.Array(Type.Unsafe<string>({ type: 'string', enum: [...EVENT_TYPES, '*'] }), {
  minItems: 1,
  maxItems: EVENT_TYPES.length + 1,
  uniqueItems: true,
  description: 'The event types to receive, or `["*"]` for every type (present and future).',
});
const Url = Type.String({
  minLength: 1,
  maxLength: 2048,
  description:
    'Where deliveries are POSTed: `https://…` (plain `http` only for hosts in WEBHOOK_ALLOW_HOSTS).',
});
const time = (description: string) => Type.String({ format: 'date-time', description });
const nullable = <T extends ReturnType<typeof Type.String> | ReturnType<typeof Type.Integer>>(schema: T) =>
  Type.Union([schema, Type.Null()]);

const endpointProperties = {
  id: Type.Integer({ format: 'int64', minimum: 1, description: 'Assigned by the service.' }),
  url: Url,
  events: EventTypes,
  enabled: Type.Boolean({ description: 'Disabled endpoints receive nothing; their deliveries wait.' }),
  disabledReason: nullable(
    Type.String({
      description: 'Why the endpoint is disabled (410 Gone, 3 days of failures, by the account).',
    }),
  ),
  createdAt: time('When the endpoint was created (RFC 3339, UTC).'),
  updatedAt: time('When the endpoint last changed (RFC 3339, UTC).'),
};

export const WebhookEndpoint = Type.Object(endpointProperties, {
  $id: 'WebhookEndpoint',
  additionalProperties: false,
  description: 'A URL that receives the account’s events, signed per the Standard Webhooks specification.',
});
export type WebhookEndpoint = Static<typeof WebhookEndpoint>;

export const WebhookEndpointWithSecret = Type.Object(
  {
    ...endpointProperties,
    secret: Type.String({
      description:
        'The signing secret (`whsec_` + base64), shown only when created or rotated. Verify deliveries with it.',
    }),
  },
  { additionalProperties: false, description: 'A webhook endpoint with its signing secret.' },
);

export const NewWebhookEndpoint = Type.Object(
  { url: Url, events: EventTypes },
  {
    $id: 'NewWebhookEndpoint',
    additionalProperties: false,
    description: 'An endpoint to register. Unknown fields are rejected.',
  },
);
export type NewWebhookEndpoint = Static<typeof NewWebhookEndpoint>;

export const WebhookEndpointPatch = Type.Object(
  {
    url: Type.Optional(Url),
    events: Type.Optional(EventTypes),
    enabled: Type.Optional(Type.Boolean({ description: '`true` re-enables a disabled endpoint.' })),
  },
  {
    $id: 'WebhookEndpointPatch',
    additionalProperties: false,
    minProperties: 1,
    description:
      'A JSON Merge Patch of `url`, `events` and `enabled`; `null` and unknown fields are rejected.',
  },
);
export type WebhookEndpointPatch = Static<typeof WebhookEndpointPatch>;

export const WebhookDelivery = Type.Object(
  {
    id: Type.Integer({ format: 'int64', minimum: 1 }),
    eventId: Type.String({ description: 'The event delivered; also the `webhook-id` header.' }),
    eventType: Type.String(),
    status: Type.Unsafe<'pending' | 'succeeded' | 'failed'>({
      type: 'string',
      enum: ['pending', 'succeeded', 'failed'],
      description: '`pending` (waiting for its next attempt), `succeeded` (2xx), `failed` (gave up).',
    }),
    attempts: Type.Integer({ minimum: 0 }),
    lastStatusCode: nullable(
      Type.Integer({ description: 'The receiver’s last HTTP status, if it answered.' }),
    ),
    lastError: nullable(Type.String({ description: 'Why the last attempt failed.' })),
    lastAttemptAt: nullable(time('When the last attempt ended.')),
    nextAttemptAt: nullable(time('When the next attempt is due (pending only).')),
    createdAt: time('When the delivery was created.'),
  },
  { $id: 'WebhookDelivery', additionalProperties: false, description: 'One event for one endpoint.' },
);
export type WebhookDelivery = Static<typeof WebhookDelivery>;

export const PageQuery = Type.Object(pageQuery('the same `limit`'), { additionalProperties: false });

const idParam = (description: string) => Type.Integer({ format: 'int64', minimum: 1, description });
export const EndpointIdParams = Type.Object({
  endpointId: idParam('The endpoint id. Malformed: 400; unknown or another account’s: 404.'),
});
export const DeliveryIdParams = Type.Object({
  endpointId: idParam('The endpoint id. Malformed: 400; unknown or another account’s: 404.'),
  deliveryId: idParam('The delivery id. Unknown or not of this endpoint: 404.'),
});
