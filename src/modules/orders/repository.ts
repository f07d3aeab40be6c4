import type { RepositoryFactory } from '../../db/database.js';
import type { IdempotencyInput } from '../../db/idempotency/records.js';
import type { Pet, PetStatus } from '../pets/index.js';
import { PostgresOrderRepository } from './repository.postgres.js';
import { SqliteOrderRepository } from './repository.sqlite.js';
import type { Inventory, OrderStatus } from './schemas.js';

/** An order as stored, with what the API may or may not show (the account's name, the version). */
export interface OrderRecord {
  id: number;
  accountId: number;
  accountName: string;
  petId: number;
  status: OrderStatus;
  version: number;
  createdAt: number;
  updatedAt: number;
}

export interface ListOrdersQuery {
  /** Only this account's orders; undefined: every account's (orders:manage). */
  accountId?: number;
  /** Only this account's orders, by name (the CLI's `--account`). */
  accountName?: string;
  status?: OrderStatus;
  petId?: number;
  /** Keyset position: only orders with a larger id. */
  afterId?: number;
  limit: number;
}

export type OrderAction = 'approve' | 'deliver' | 'cancel';

export type Replayable<T> =
  | T
  | { kind: 'replayed'; status: number; body: OrderRecord }
  | { kind: 'idempotency_mismatch' }
  | { kind: 'idempotency_in_progress' };

export type PlaceOrderOutcome =
  | { kind: 'placed'; order: OrderRecord }
  | { kind: 'unknown_pet' }
  | { kind: 'pet_not_available' }
  | { kind: 'open_order_limit'; limit: number };
export type PlaceOrderResult = Replayable<PlaceOrderOutcome>;

export interface TransitionInput {
  id: number;
  action: OrderAction;
  /** Only this account's order may be acted on (another's is `not_found`); undefined: any (orders:manage). */
  accountId?: number;
  /** If-Match, evaluated against the order's current version inside the transaction; undefined: none. */
  ifMatch?: (version: number) => boolean;
  now: number;
}

export type TransitionOutcome =
  | { kind: 'done'; order: OrderRecord }
  | { kind: 'not_found' }
  | { kind: 'precondition_failed'; version: number }
  | { kind: 'invalid_transition'; status: OrderStatus };
export type TransitionResult = Replayable<TransitionOutcome>;

/**
 * The orders repository, implemented once per backend; test/orders.test.ts and
 * test/orders.concurrency.test.ts hold both to this contract through the API:
 *
 * - `place` is one transaction: the pet moves `available` → `pending` (version + 1) with a conditional
 *   update and the order is inserted `placed`, or nothing happens. Of any number of concurrent orders for
 *   one pet exactly one is `placed`; the others are `pet_not_available`. An account's open orders
 *   (placed, approved) are counted inside the same transaction, serialised per account, so concurrent
 *   orders of one account never exceed `maxOpen`. An unknown pet is `unknown_pet`.
 * - `transition` is one transaction: the order moves per TRANSITIONS only from the status it was read in
 *   (row lock / write lock), its version + 1 and `updatedAt` = now, and the pet's status (version + 1)
 *   moves with it. Of two concurrent actions on one order at most one applies its move; the other sees
 *   the new status. `ifMatch` and `accountId` are checked on the locked row.
 * - With an idempotency input, both record their success (201 / 200 and the order) in the same
 *   transaction and replay it on a repeat (see src/http/idempotency).
 * - `list` returns orders ordered by id ascending, at most `limit`, filtered, starting after `afterId`.
 * - `readVersion` labels list pages for the exact page cache, with the promises of src/http/page-cache.ts:
 *   never newer than the data a list started after it reads, and moved by every write that answered before
 *   the request arrived, on any instance (undefined: no label, nothing cached).
 * - `inventory` counts pets by status, zeros included.
 * - Errors reaching the database reject with `StorageUnavailableError`.
 */
export interface OrderRepository {
  place(
    input: { accountId: number; petId: number; maxOpen: number; now: number },
    idempotency?: IdempotencyInput,
  ): Promise<PlaceOrderResult>;
  transition(input: TransitionInput, idempotency?: IdempotencyInput): Promise<TransitionResult>;
  get(id: number): Promise<OrderRecord | undefined>;
  list(query: ListOrdersQuery): Promise<OrderRecord[]>;
  readVersion(): string | undefined;
  inventory(): Promise<Inventory>;
}

export const orderRepository: RepositoryFactory<OrderRepository> = {
  sqlite: (db) => new SqliteOrderRepository(db),
  postgres: (db) => new PostgresOrderRepository(db),
};

/** A pet row as an order change leaves it, with the status it had before. */
export type MovedPet = Pet & { version: number; previousStatus: PetStatus };
