/** The orders' rules, shared by both backends (which do the I/O only). */
import { buildEvent, previousValues, type NewEvent } from '../events/index.js';
import type { Pet, PetStatus } from '../pets/index.js';
import type { OrderRecord, ListOrdersQuery, OrderAction, MovedPet } from './repository.js';
import type { Inventory, Order } from './schemas.js';
import { OPEN_ORDER_STATUSES, type OrderStatus } from './statuses.js';

/** What each action does: the statuses it applies to, the order's new status and the pet's. */
export const TRANSITIONS: Record<
  OrderAction,
  { from: readonly OrderStatus[]; to: OrderStatus; pet: PetStatus | undefined }
> = {
  // The pet stays pending: an approved order still holds it.
  approve: { from: ['placed'], to: 'approved', pet: undefined },
  deliver: { from: ['approved'], to: 'delivered', pet: 'sold' },
  cancel: { from: OPEN_ORDER_STATUSES, to: 'cancelled', pet: 'available' },
};

/** The inventory from the pets' counts by status, zeros included. */
export function inventoryOf(counts: ReadonlyMap<PetStatus, number>): Inventory {
  return {
    available: counts.get('available') ?? 0,
    pending: counts.get('pending') ?? 0,
    sold: counts.get('sold') ?? 0,
  };
}

/** The filters of a list query as a fixed-order key, so each shape gets one prepared statement. */
export function listShape(query: ListOrdersQuery): { where: string[]; values: (string | number)[] } {
  const where: string[] = [];
  const values: (string | number)[] = [];
  const add = (column: string, value: string | number | undefined): void => {
    if (value === undefined) return;
    where.push(column);
    values.push(value);
  };
  add('o.account_id', query.accountId);
  add('a.name', query.accountName);
  add('o.status', query.status);
  add('o.pet_id', query.petId);
  return { where, values };
}

/**
 * The events of an order change, appended in its transaction: the order's (`order.placed` or
 * `order.<new status>`, visible to the order's account) and then its pet's status move (`pet.updated`).
 * The order is rendered as its own account sees it (without `account`).
 */
export function orderEvents(
  before: OrderRecord | undefined,
  after: OrderRecord,
  pet: MovedPet | undefined,
  now: number,
): NewEvent[] {
  const object = renderOrder(after, false);
  const previous = before ? previousValues(renderOrder(before, false), object) : {};
  const type = before ? (`order.${after.status}` as const) : 'order.placed';
  const events = [
    buildEvent(type as NewEvent['type'], { object, previous, version: after.version }, now, after.accountId),
  ];
  if (pet) {
    const { version, previousStatus, ...moved } = pet;
    const object: Pet = {
      id: moved.id,
      name: moved.name,
      categoryId: moved.categoryId,
      status: moved.status,
    };
    events.push(buildEvent('pet.updated', { object, previous: { status: previousStatus }, version }, now));
  }
  return events;
}

/** The API's view of an order: `account` only for callers who may see every account's orders. */
export function renderOrder(order: OrderRecord, showAccount: boolean): Order {
  // Formatting a date is most of rendering an order; an order never changed since placing needs one.
  const createdAt = new Date(order.createdAt).toISOString();
  const updatedAt = order.updatedAt === order.createdAt ? createdAt : new Date(order.updatedAt).toISOString();
  const { id, petId, status } = order;
  // Two literals rather than adding `account` afterwards: each keeps one object shape for the serializer.
  return showAccount
    ? { id, petId, status, createdAt, updatedAt, account: order.accountName }
    : { id, petId, status, createdAt, updatedAt };
}
