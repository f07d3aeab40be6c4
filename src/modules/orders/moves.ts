/**
 * The listeners that follow an order's move in the moving transaction (applications: a delivery is the
 * adoption, a cancellation closes the application). Apart from within.ts, which uses the repository: the
 * repositories run these listeners, so this file imports nothing of theirs but types (no import circle).
 */
import { TransactionListeners } from '../within.js';
import type { OrderRecord, PlaceOrderOutcome, TransitionOutcome } from './repository.js';
import type { OrderStatus } from './schemas.js';

/** An order that moved (approve, deliver, cancel), inside the moving transaction. */
export interface OrderMove {
  orderId: number;
  petId: number;
  from: OrderStatus;
  to: OrderStatus;
  now: number;
}

/** Run by both backends' order actions, after the order's and its pet's rows changed. */
export const orderMoves = new TransactionListeners<OrderMove>();

/** The move from an order as read to the order as an action left it. */
export function moveOf(before: OrderRecord, outcome: WriteResult): OrderMove {
  const after = (outcome as { order: OrderRecord }).order;
  return {
    orderId: before.id,
    petId: before.petId,
    from: before.status,
    to: after.status,
    now: after.updatedAt,
  };
}
type WriteResult = PlaceOrderOutcome | TransitionOutcome;
