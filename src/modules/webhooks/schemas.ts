/** Webhook endpoints and deliveries: components `WebhookEndpoint` and `WebhookDelivery`. */
import { Type, type Static } from 'typebox';
import { pageQuery } from '../../http/paging.js';
import { INT64_MAX, issuedId, MAX_ID, timestamp } from '../../http/schemas.js';

const built = new Map<string, ReturnType<typeof build>>();

/**
 * The webhook components for the event types the served modules declare (an endpoint subscribes to those,
 * or `*`), built once per distinct list; the app hands the types in (webhooks imports no emitting module).
 */
export function webhookSchemas(eventTypes: readonly string[]): ReturnType<typeof build> {
  let schemas = built.get(eventTypes.join());
  if (!schemas) {
    schemas = build(eventTypes);
    built.set(eventTypes.join(), schemas);
  }
  return schemas;
}

function build(eventTypes: readonly string[]) {
  const EventTypes = Type.Array(Type.Unsafe<string>({ type: 'string', enum: [...eventTypes, '*'] }), {
    minItems: 1,
    maxItems: eventTypes.length + 1,
    uniqueItems: true,
    description: 'The event types to receive, or `["*"]` for every type (present and future).',
    example: ['pet.created', 'order.placed'],
  });
  const Url = Type.String({
    minLength: 1,
    maxLength: 2048,
    description:
      'Where deliveries are POSTed: `https://…` (plain `http` only for hosts in WEBHOOK_ALLOW_HOSTS).',
    example: 'https://shop.example.com/hooks/pet-adoption',
  });
  const time = timestamp;
  const nullable = <T extends ReturnType<typeof Type.String> | ReturnType<typeof Type.Integer>>(schema: T) =>
    Type.Union([schema, Type.Null()]);

  const endpointProperties = {
    id: issuedId('Assigned by the service.', 3),
    url: Url,
    events: EventTypes,
    scope: Type.Unsafe<'own' | 'all'>({
      type: 'string',
      enum: ['own', 'all'],
      description:
        "Which `order.*` events it receives, as of this answer: `all` (every account's) while the key that made " +
        'it had `orders:manage` and an active key of the account has it; otherwise `own` (the account’s own ' +
        'orders, while an active key has `orders:read`). Decided again for every event, from the keys active then.',
      example: 'own',
    }),
    enabled: Type.Boolean({ description: 'Disabled endpoints receive nothing; their deliveries wait.' }),
    disabledReason: nullable(
      Type.String({
        maxLength: 200,
        description: 'Why the endpoint is disabled (410 Gone, 3 days of failures, by the account).',
        example: 'the receiver answered 410 Gone',
      }),
    ),
    createdAt: time('When the endpoint was created (RFC 3339, UTC).'),
    updatedAt: time('When the endpoint last changed (RFC 3339, UTC).'),
  };

  const ENDPOINT_EXAMPLE = {
    id: 3,
    url: 'https://shop.example.com/hooks/pet-adoption',
    events: ['pet.created', 'order.placed'],
    scope: 'own',
    enabled: true,
    disabledReason: null,
    createdAt: '2026-06-15T12:00:30.000Z',
    updatedAt: '2026-06-15T12:00:30.000Z',
  };

  const WebhookEndpoint = Type.Object(endpointProperties, {
    $id: 'WebhookEndpoint',
    additionalProperties: false,
    description: 'A URL that receives the account’s events, signed per the Standard Webhooks specification.',
    example: ENDPOINT_EXAMPLE,
  });

  const WebhookEndpointWithSecret = Type.Object(
    {
      ...endpointProperties,
      secret: Type.String({
        pattern: '^whsec_[A-Za-z0-9+/]+={0,2}$',
        maxLength: 100,
        example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
        description:
          'The signing secret (`whsec_` + base64), shown only when created or rotated. Verify deliveries with it.',
      }),
    },
    {
      additionalProperties: false,
      description: 'A webhook endpoint with its signing secret.',
      example: {
        ...ENDPOINT_EXAMPLE,
        secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      },
    },
  );

  const NewWebhookEndpoint = Type.Object(
    { url: Url, events: EventTypes },
    {
      $id: 'NewWebhookEndpoint',
      additionalProperties: false,
      description: 'An endpoint to register. Unknown fields are rejected.',
      example: {
        url: 'https://shop.example.com/hooks/pet-adoption',
        events: ['pet.created', 'order.placed'],
      },
    },
  );

  const WebhookEndpointPatch = Type.Object(
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
      example: { enabled: true },
    },
  );

  const WebhookDelivery = Type.Object(
    {
      id: issuedId('Assigned by the service.', 11),
      eventId: Type.String({
        pattern: '^evt_[0-9a-f]{24}$',
        maxLength: 28,
        description: 'The event delivered; also the `webhook-id` header.',
        example: 'evt_0123456789abcdef01234567',
      }),
      eventType: Type.Unsafe<string>({
        type: 'string',
        enum: [...eventTypes],
        description: 'The type of the event delivered.',
        example: 'pet.created',
      }),
      status: Type.Unsafe<'pending' | 'succeeded' | 'failed'>({
        type: 'string',
        enum: ['pending', 'succeeded', 'failed'],
        description: '`pending` (waiting for its next attempt), `succeeded` (2xx), `failed` (gave up).',
      }),
      attempts: Type.Integer({
        format: 'int64',
        minimum: 0,
        maximum: MAX_ID,
        description: 'Attempts made so far.',
        example: 1,
      }),
      lastStatusCode: nullable(
        Type.Integer({
          format: 'int32',
          minimum: 100,
          maximum: 999,
          description: 'The receiver’s last HTTP status, if it answered.',
          example: 200,
        }),
      ),
      lastError: nullable(
        Type.String({
          maxLength: 32,
          pattern:
            '^(dns_failed|address_not_allowed|connect_failed|timeout|tls_failed|http_[1-9][0-9]{2}|not_authorized|endpoint_disabled)$',
          description:
            'Why the last attempt failed, as a category: `dns_failed` (the host did not resolve), ' +
            '`address_not_allowed` (it resolved to a private, loopback or otherwise non-public address), ' +
            '`connect_failed` (no connection, or it broke before an answer), `timeout` (no answer in 15 s), ' +
            '`tls_failed` (handshake or certificate), `http_<status>` (the receiver answered a non-2xx status), ' +
            '`not_authorized` (not sent: the account no longer holds an active key that may read the event), ' +
            '`endpoint_disabled` (not sent: the endpoint was disabled).',
          example: 'http_503',
        }),
      ),
      lastAttemptAt: nullable(time('When the last attempt ended.')),
      nextAttemptAt: nullable(time('When the next attempt is due (pending only).')),
      createdAt: time('When the delivery was created.'),
    },
    {
      $id: 'WebhookDelivery',
      additionalProperties: false,
      description: 'One event for one endpoint.',
      example: {
        id: 11,
        eventId: 'evt_0123456789abcdef01234567',
        eventType: 'pet.created',
        status: 'succeeded',
        attempts: 1,
        lastStatusCode: 200,
        lastError: null,
        lastAttemptAt: '2026-06-15T12:00:31.000Z',
        nextAttemptAt: null,
        createdAt: '2026-06-15T12:00:30.000Z',
      },
    },
  );
  return {
    NewWebhookEndpoint,
    WebhookEndpoint,
    WebhookEndpointWithSecret,
    WebhookEndpointPatch,
    WebhookDelivery,
  };
}

type Built = ReturnType<typeof build>;
export type WebhookEndpoint = Static<Built['WebhookEndpoint']>;
export type NewWebhookEndpoint = Static<Built['NewWebhookEndpoint']>;
export type WebhookEndpointPatch = Static<Built['WebhookEndpointPatch']>;
export type WebhookDelivery = Static<Built['WebhookDelivery']>;

export const PageQuery = Type.Object(pageQuery('the same `limit`'), { additionalProperties: false });

const idParam = (description: string) =>
  Type.Integer({ format: 'int64', minimum: 1, maximum: INT64_MAX, description, example: 3 });
export const EndpointIdParams = Type.Object({
  endpointId: idParam('The endpoint id. Malformed: 400; unknown or another account’s: 404.'),
});
export const DeliveryIdParams = Type.Object({
  endpointId: idParam('The endpoint id. Malformed: 400; unknown or another account’s: 404.'),
  deliveryId: idParam('The delivery id. Unknown or not of this endpoint: 404.'),
});
