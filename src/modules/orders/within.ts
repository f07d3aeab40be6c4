/**
 * What other modules may do to orders inside their own transaction (applications: an approval places the
 * order, a withdrawal cancels it), and the listeners that follow an order's move in the moving transaction
 * (applications: a delivery is the adoption, a cancellation closes the application; moves.ts). Exported
 * through index.ts; the orders module itself never imports its listeners.
 */
import type { PoolClient } from 'pg';
import type { PostgresDatabase } from '../../db/postgres.js';
import type { SqliteDatabase } from '../../db/sqlite.js';
import { orderRepository, type PlaceOrderOutcome, type TransitionOutcome } from './repository.js';
import type { PostgresOrderRepository } from './repository.postgres.js';
import type { SqliteOrderRepository } from './repository.sqlite.js';

export { orderMoves, type OrderMove } from './moves.js';

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
  /** Several placements in one set of statements, each decided in turn as the ones before it left the rows. */
  postgresPlace(
    database: PostgresDatabase,
    client: PoolClient,
    inputs: Place[],
  ): Promise<PlaceOrderOutcome[]> {
    return (database.repository(orderRepository) as PostgresOrderRepository).placeWithin(client, inputs);
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
