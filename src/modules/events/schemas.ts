/**
 * The events module's schemas: the Event component (what the feed lists and webhook receivers get, byte for
 * byte) and the feed's query, built from the event types the served modules declare (`ApiModule.events`):
 * each type's `data.object` is documented exactly, as one `oneOf` of the declared objects in the OpenAPI
 * document (and in the SDK generated from it). The declarations are handed in (the app's module list), so
 * this module imports no other; the other direction (pets and orders appending events) goes through the
 * appenders in repository.ts.
 */
import { Type, type Static, type TSchema } from 'typebox';
import { pageQuery } from '../../http/paging.js';
import { MAX_ID, ref, timestamp } from '../../http/schemas.js';
import type { EventDeclaration, EventType } from '../module.js';

export type { EventType } from '../module.js';

/** The declared types' names, in module order. */
export function eventTypeNames(declared: readonly EventDeclaration[]): EventType[] {
  return declared.map((event) => event.type);
}

/** `a`, `a or b`, `a, b or c`. */
function alternatives(words: string[]): string {
  return words.length < 2 ? words.join('') : `${words.slice(0, -1).join(', ')} or ${words.at(-1)}`;
}

function eventTypeSchema(declared: readonly EventDeclaration[]) {
  return Type.Unsafe<EventType>({
    type: 'string',
    enum: eventTypeNames(declared),
    description: `What happened: ${alternatives(declared.map((event) => `\`${event.type}\``))}.`,
    example: 'pet.created',
  });
}

/** Each object schema once (several types share one), in the order first declared. */
function objects(declared: readonly EventDeclaration[]): TSchema[] {
  return [...new Set(declared.map((event) => event.object))];
}

const built = new Map<string, ReturnType<typeof build>>();

/** The Event component and the feed's query for these declarations (built once per distinct list). */
export function eventSchemas(declared: readonly EventDeclaration[]): ReturnType<typeof build> {
  const key = declared
    .map((event) => `${event.type}:${String((event.object as { $id?: unknown }).$id)}`)
    .join();
  let schemas = built.get(key);
  if (!schemas) {
    schemas = build(declared);
    built.set(key, schemas);
  }
  return schemas;
}

function build(declared: readonly EventDeclaration[]) {
  const EventTypeSchema = eventTypeSchema(declared);
  const described = declared.flatMap((event) => (event.describe ? [event.describe] : []));
  const Event = Type.Object(
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
          object: Type.Union(
            objects(declared).map((object) => ref(object)),
            {
              description: `The resource after the change, exactly as the API returns it: ${described.join('; ')}.`,
            },
          ),
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
      description: 'A change of a resource, written in the same transaction as the change.',
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

  const Events = Type.Array(ref(Event), {
    maxItems: 100,
    description: 'A page of events, oldest first.',
  });

  const ListEventsQuery = Type.Object(
    {
      type: Type.Optional({
        ...EventTypeSchema,
        description: 'Only events of this type. Omitted: every type.',
      }),
      ...pageQuery('the same `type`', { polled: true }),
    },
    { additionalProperties: false },
  );
  return { EventType: EventTypeSchema, Event, Events, ListEventsQuery };
}

type Built = ReturnType<typeof build>;
export type Event = Static<Built['Event']>;
export type ListEventsQuery = Static<Built['ListEventsQuery']>;
