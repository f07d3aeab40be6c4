/**
 * What other modules may do to orders inside their own transaction (applications: an approval places the
 * order, a withdrawal cancels it), the listeners that follow an order's move in the moving transaction
 * (applications: a delivery is the adoption, a cancellation closes the application; moves.ts), and the hold
 * orders register with pets (index.ts): a pet with an open order keeps its status and its row. Exported
 * through index.ts; the orders module itself never imports its listeners.
 */
import type { PoolClient } from 'pg';
import type { PostgresDatabase } from '../../db/postgres.js';
import type { SqliteDatabase } from '../../db/sqlite.js';
import type { PetHold } from '../pets/index.js';
import { orderRepository, type PlaceOrderOutcome, type TransitionOutcome } from './repository.js';
import type { PostgresOrderRepository } from './repository.postgres.js';
import type { SqliteOrderRepository } from './repository.sqlite.js';
import { openOrderSql } from './statuses.js';

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

/** Asked by the pets' writes before a status change or a removal, on the pets they locked. */
export const openOrderHold: PetHold = {
  sqlite(database, petIds) {
    return (database.repository(orderRepository) as SqliteOrderRepository).openOrderPets(petIds);
  },
  async postgres(_database, client, petIds) {
    const { rows } = await client.query<{ id: string | number }>({
      name: 'orders_open_order_pets',
      text: `SELECT DISTINCT pet_id AS id FROM orders WHERE pet_id = ANY($1::bigint[]) AND ${openOrderSql()}`,
      values: [petIds],
    });
    return new Set(rows.map((row) => Number(row.id)));
  },
};
