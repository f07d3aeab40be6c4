/**
 * The events module's schemas: the Event component (what the feed lists and webhook receivers get, byte for
 * byte) and the feed's query.
 *
 * This file imports the Pet and Order schemas on purpose: the Event component documents each event type's
 * `data.object` exactly, as one `oneOf` in the OpenAPI document (and in the SDK generated from it). Only
 * schemas cross (no code), and nothing in pets or orders imports this file, so there is no cycle; the other
 * direction (pets and orders appending events) goes through the appenders in repository.ts.
 */
import { Type, type Static } from 'typebox';
import { MAX_ID, ref, timestamp } from '../../http/schemas.js';
import { Order } from '../orders/schemas.js';
import { Pet } from '../pets/schemas.js';
import { PetProfileChange } from '../profiles/schemas.js';

export const EVENT_TYPES = [
  'pet.created',
  'pet.updated',
  'pet.deleted',
  'pet.profile_updated',
  'order.placed',
  'order.approved',
  'order.delivered',
  'order.cancelled',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

const EventTypeSchema = Type.Unsafe<EventType>({
  type: 'string',
  enum: [...EVENT_TYPES],
  description:
    'What happened: `pet.created`, `pet.updated`, `pet.deleted`, `pet.profile_updated`, or `order.<placed|approved|delivered|cancelled>`.',
  example: 'pet.created',
});

export const Event = Type.Object(
  {
    id: Type.String({
      pattern: '^evt_[0-9a-f]{24}$',
      maxLength: 28,
      example: 'evt_0123456789abcdef01234567',
      description:
        'Unique id of the event (`evt_…`); also the `webhook-id` of its deliveries. Deduplicate on it.',
    }),
    type: EventTypeSchema,
    timestamp: timestamp('When the change was committed (RFC 3339, UTC).'),
    data: Type.Object(
      {
        object: Type.Union([ref(Pet), ref(Order), ref(PetProfileChange)], {
          description:
            'The resource after the change, exactly as the API returns it (a Pet or an Order; for `pet.profile_updated` the pet id and its profile); for `pet.deleted` the pet as it was.',
        }),
        previous: Type.Object(
          {},
          {
            additionalProperties: true,
            description:
              'The old values of the fields this change modified (`{}` on creation, on `order.placed` and on deletion).',
          },
        ),
        version: Type.Integer({
          format: 'int64',
          minimum: 1,
          maximum: MAX_ID,
          example: 1,
          description:
            "The object's version after the change (its ETag); an event with a version not above one already applied is stale.",
        }),
      },
      { additionalProperties: false },
    ),
  },
  {
    $id: 'Event',
    additionalProperties: false,
    description: 'A change of a pet or an order, written in the same transaction as the change.',
    example: {
      id: 'evt_0123456789abcdef01234567',
      type: 'pet.updated',
      timestamp: '2026-06-15T12:00:30.000Z',
      data: {
        object: { id: 42, name: 'Rex', categoryId: 1, status: 'pending' },
        previous: { status: 'available' },
        version: 2,
      },
    },
  },
);
export type Event = Static<typeof Event>;

export const Events = Type.Array(ref(Event), {
  maxItems: 100,
  description: 'A page of events, oldest first.',
});

export const ListEventsQuery = Type.Object(
  {
    type: Type.Optional({
      ...EventTypeSchema,
      description: 'Only events of this type. Omitted: every type.',
    }),
    limit: Type.Optional(
      Type.Integer({
        format: 'int32',
        minimum: 1,
        maximum: 100,
        default: 20,
        description: 'Page size, 1..100. Values outside the range are rejected with 400, never clamped.',
      }),
    ),
    cursor: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description:
          'Opaque cursor taken from the `Link: rel="next"` header of the previous page (or poll). Use it with the same `type`.',
      }),
    ),
  },
  { additionalProperties: false },
);
export type ListEventsQuery = Static<typeof ListEventsQuery>;
