/**
 * What other modules may do to orders inside their own transaction (applications: an approval places the
 * order, a withdrawal cancels it), and the listeners that follow an order's move in the moving transaction
 * (applications: a delivery is the adoption, a cancellation closes the application). Exported through
 * index.ts; the orders module itself never imports its listeners.
 */
import type { PoolClient } from 'pg';
import type { PostgresDatabase } from '../../db/postgres.js';
import type { SqliteDatabase } from '../../db/sqlite.js';
import { TransactionListeners } from '../within.js';
import {
  orderRepository,
  type OrderRecord,
  type PlaceOrderOutcome,
  type TransitionOutcome,
} from './repository.js';
import type { PostgresOrderRepository } from './repository.postgres.js';
import type { SqliteOrderRepository } from './repository.sqlite.js';
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

type Place = { accountId: number; petId: number; maxOpen: number; now: number };

export const ordersWithin = {
  sqlitePlace(database: SqliteDatabase, input: Place): PlaceOrderOutcome {
    return (database.repository(orderRepository) as SqliteOrderRepository).placeInTransaction(input);
  },
  sqliteCancel(database: SqliteDatabase, orderId: number, now: number): TransitionOutcome {
    return (database.repository(orderRepository) as SqliteOrderRepository).transitionInTransaction({
      id: orderId,
      action: 'cancel',
      now,
    });
  },
  postgresPlace(database: PostgresDatabase, client: PoolClient, input: Place): Promise<PlaceOrderOutcome> {
    return (database.repository(orderRepository) as PostgresOrderRepository).placeWithin(client, input);
  },
  postgresCancel(
    database: PostgresDatabase,
    client: PoolClient,
    orderId: number,
    now: number,
  ): Promise<TransitionOutcome> {
    return (database.repository(orderRepository) as PostgresOrderRepository).transitionWithin(client, {
      id: orderId,
      action: 'cancel',
      now,
    });
  },
};
