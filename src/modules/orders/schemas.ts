/**
 * The orders module's schemas: `Order` is a component referenced with `$ref`; the rest are
 * route-local (bodies, query strings, path parameters).
 */
import { Type, type Static } from 'typebox';
import { IdempotencyHeaders } from '../../http/idempotency/index.js';
import { pageQuery } from '../../http/paging.js';
import { issuedId, MAX_ID, pathId, ref, timestamp } from '../../http/schemas.js';
import { ORDER_STATUSES, type OrderStatus } from './statuses.js';

export { ORDER_STATUSES, type OrderStatus } from './statuses.js';

export const OrderStatusSchema = Type.Unsafe<OrderStatus>({
  type: 'string',
  enum: [...ORDER_STATUSES],
  description:
    '`placed` → `approved` → `delivered`; `placed` or `approved` → `cancelled`. The last two are final.',
  example: 'placed',
});

const id = (description: string) =>
  Type.Integer({ format: 'int64', minimum: 1, maximum: MAX_ID, description, example: 42 });

export const Order = Type.Object(
  {
    id: issuedId('Unique identifier assigned by the service.', 7),
    petId: issuedId('The ordered pet.', 42),
    status: OrderStatusSchema,
    createdAt: timestamp('When the order was placed (RFC 3339, UTC).'),
    updatedAt: timestamp('When the order last changed (RFC 3339, UTC).'),
    account: Type.Optional(
      Type.String({
        minLength: 1,
        // `keys create --account` takes at most 100 characters.
        maxLength: 100,
        description: 'The placing account. Shown only to callers with `orders:manage`.',
        example: 'my-store',
      }),
    ),
  },
  {
    $id: 'Order',
    additionalProperties: false,
    description: 'A store order for one pet.',
    example: {
      id: 7,
      petId: 42,
      status: 'placed',
      createdAt: '2026-06-15T12:00:30.000Z',
      updatedAt: '2026-06-15T12:00:30.000Z',
    },
  },
);
export type Order = Static<typeof Order>;

export const Orders = Type.Array(ref(Order), {
  maxItems: 100,
  description: 'A page of orders, ordered by id ascending.',
});

export const NewOrder = Type.Object(
  { petId: id('The pet to order; it must be `available`. Unknown ids are rejected with 400.') },
  {
    additionalProperties: false,
    description: 'An order to place. Unknown fields are rejected.',
    example: { petId: 42 },
  },
);
export type NewOrder = Static<typeof NewOrder>;

export const ListOrdersQuery = Type.Object(
  {
    ...pageQuery('the same filters'),
    status: Type.Optional({ ...OrderStatusSchema, description: 'Only orders with this status.' }),
    petId: Type.Optional(id('Only orders of this pet.')),
  },
  { additionalProperties: false },
);
export type ListOrdersQuery = Static<typeof ListOrdersQuery>;

export const OrderIdParams = Type.Object({
  orderId: pathId('The order id, a positive integer. Malformed: 400; unknown or not yours: 404.', 7),
});

const count = (description: string) =>
  Type.Integer({ format: 'int64', minimum: 0, maximum: MAX_ID, description });

export const Inventory = Type.Object(
  {
    available: count('Pets that can be ordered.'),
    pending: count('Pets held by an open order.'),
    sold: count('Pets whose order was delivered.'),
  },
  {
    additionalProperties: false,
    description: 'How many pets are in each status.',
    example: { available: 12, pending: 3, sold: 40 },
  },
);
export type Inventory = Static<typeof Inventory>;

/** An action's headers: Idempotency-Key and If-Match. */
export const ActionHeaders = Type.Object({
  ...IdempotencyHeaders.properties,
  'if-match': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 1024,
      description:
        'Act only if the order is still at this version: its strong ETag (`"<n>"`), a list, or `*`. Stale: 412.',
    }),
  ),
});
