import type { PoolClient } from 'pg';
import type { PostgresDatabase } from '../../db/postgres.js';
import type { IdempotencyInput } from '../../db/idempotency/records.js';
import { idempotencyRepository } from '../../db/idempotency/repository.js';
import type { PostgresIdempotency } from '../../db/idempotency/repository.postgres.js';
import { eventRepository, type PostgresEventAppender } from '../events/repository.js';
import {
  fromIdempotent,
  listShape,
  orderEvents,
  type MovedPet,
  TRANSITIONS,
  type ListOrdersQuery,
  type OrderRecord,
  type OrderRepository,
  type PlaceOrderOutcome,
  type PlaceOrderResult,
  type TransitionInput,
  type TransitionOutcome,
  type TransitionResult,
} from './repository.js';
import type { Inventory } from './schemas.js';

const ORDER_COLUMNS = `o.id, o.account_id AS "accountId", a.name AS "accountName", o.pet_id AS "petId",
  o.status, o.version, o.created_at AS "createdAt", o.updated_at AS "updatedAt"`;
const FROM = 'FROM orders o JOIN accounts a ON a.id = o.account_id';
const MOVED_PET = 'id, name, category_id AS "categoryId", status, version';

const SQL = {
  get: `SELECT ${ORDER_COLUMNS} ${FROM} WHERE o.id = $1`,
  // Serialises one account's orders (the open-order count below cannot be passed by two at once). NO KEY
  // UPDATE rather than UPDATE: it still excludes the same lock, but not the key-share locks that foreign
  // keys to the account (idempotency records, orders) take in other transactions.
  lockAccount: 'SELECT 1 FROM accounts WHERE id = $1 FOR NO KEY UPDATE',
  // Bounded by the limit: never counts further than it needs to decide.
  openCount: `SELECT count(*)::int AS n FROM (SELECT 1 FROM orders
    WHERE account_id = $1 AND status IN ('placed', 'approved') LIMIT $2) open`,
  petExists: 'SELECT 1 FROM pets WHERE id = $1',
  // Conditional: of concurrent orders for one pet, the first to lock the row moves it; the others re-check
  // `status = 'available'` after it commits (READ COMMITTED) and update nothing.
  holdPet: `UPDATE pets SET status = 'pending', version = version + 1 WHERE id = $1 AND status = 'available'
    RETURNING ${MOVED_PET}, 'available' AS "previousStatus"`,
  // The new order as `get` reads it, in the same statement.
  insert: `WITH o AS (INSERT INTO orders (account_id, pet_id, status, created_at, updated_at)
      VALUES ($1, $2, 'placed', $3, $3) RETURNING *)
    SELECT ${ORDER_COLUMNS} FROM o JOIN accounts a ON a.id = o.account_id`,
  lockOrder: `SELECT ${ORDER_COLUMNS} ${FROM} WHERE o.id = $1 FOR UPDATE OF o`,
  // The moved order as `get` reads it, in the same statement.
  move: `WITH o AS (UPDATE orders SET status = $2, version = version + 1, updated_at = $3
      WHERE id = $1 AND status = $4 RETURNING *)
    SELECT ${ORDER_COLUMNS} FROM o JOIN accounts a ON a.id = o.account_id`,
  // The self-join reads the row as it was before this update: the status the event names as previous.
  movePet: `UPDATE pets p SET status = $2, version = p.version + 1 FROM pets old
    WHERE p.id = $1 AND old.id = p.id
    RETURNING p.id, p.name, p.category_id AS "categoryId", p.status, p.version, old.status AS "previousStatus"`,
  inventory: 'SELECT status, count(*)::int AS n FROM pets GROUP BY status',
} as const;

type Place = { accountId: number; petId: number; maxOpen: number; now: number };

/** Test seams for fault injection; empty in production. */
export interface PostgresOrderHooks {
  /** Runs inside a placement's or an action's transaction, right after its rows and events are written. */
  afterWrite?: (client: PoolClient) => void | Promise<void>;
}

function isOpenOrderConflict(error: unknown): boolean {
  const { code, constraint } = (error ?? {}) as { code?: unknown; constraint?: unknown };
  return code === '23505' && constraint === 'orders_one_open_per_pet';
}

export class PostgresOrderRepository implements OrderRepository {
  readonly hooks: PostgresOrderHooks = {};
  private readonly idempotency: PostgresIdempotency;
  private readonly events: PostgresEventAppender;

  constructor(private readonly db: PostgresDatabase) {
    this.idempotency = db.repository(idempotencyRepository);
    this.events = db.repository(eventRepository);
  }

  /** The read_versions sum seen with this turn's key lookups; orders bump it too (migration 012). */
  readVersion(): string | undefined {
    const version = this.db.readVersion;
    return version === undefined ? undefined : String(version);
  }

  private async placeInTransaction(client: PoolClient, input: Place): Promise<PlaceOrderOutcome> {
    await client.query({ name: 'orders_lock_account', text: SQL.lockAccount, values: [input.accountId] });
    // The refusals in the order the API gives them (unknown pet, then the account's limit, then the pet's
    // status), with the pet's existence read only when a refusal needs it: one round trip fewer for an
    // order that goes through.
    const petExists = async (): Promise<boolean> =>
      ((await client.query({ name: 'orders_pet_exists', text: SQL.petExists, values: [input.petId] }))
        .rowCount ?? 0) > 0;
    const open = await client.query<{ n: number }>({
      name: 'orders_open_count',
      text: SQL.openCount,
      values: [input.accountId, input.maxOpen],
    });
    if (open.rows[0]!.n >= input.maxOpen) {
      return (await petExists())
        ? { kind: 'open_order_limit', limit: input.maxOpen }
        : { kind: 'unknown_pet' };
    }
    const held = await client.query<MovedPet>({
      name: 'orders_hold_pet',
      text: SQL.holdPet,
      values: [input.petId],
    });
    const pet = held.rows[0];
    if (!pet) return (await petExists()) ? { kind: 'pet_not_available' } : { kind: 'unknown_pet' };
    const inserted = await client.query<OrderRecord>({
      name: 'orders_insert_returning',
      text: SQL.insert,
      values: [input.accountId, input.petId, input.now],
    });
    const placed = inserted.rows[0]!;
    await this.events.appendAll(client, orderEvents(undefined, placed, pet, input.now));
    await this.hooks.afterWrite?.(client);
    return { kind: 'placed', order: placed };
  }

  async place(input: Place, idempotency?: IdempotencyInput): Promise<PlaceOrderResult> {
    try {
      return await this.db.transaction(async (client) =>
        idempotency
          ? fromIdempotent(
              await this.idempotency.run(
                client,
                idempotency,
                () => this.placeInTransaction(client, input),
                (result) => (result.kind === 'placed' ? { status: 201, body: result.order } : undefined),
              ),
            )
          : this.placeInTransaction(client, input),
      );
    } catch (error) {
      // The conditional update already refuses a held pet; the index is the backstop should any other
      // path ever open an order for it.
      if (isOpenOrderConflict(error)) return { kind: 'pet_not_available' };
      throw error;
    }
  }

  private async transitionInTransaction(
    client: PoolClient,
    input: TransitionInput,
  ): Promise<TransitionOutcome> {
    // The order's row lock: a racing action waits here and then reads the status this one left.
    const locked = await client.query<OrderRecord>({
      name: 'orders_lock_order',
      text: SQL.lockOrder,
      values: [input.id],
    });
    const order = locked.rows[0];
    if (!order || (input.accountId !== undefined && order.accountId !== input.accountId)) {
      return { kind: 'not_found' };
    }
    if (input.ifMatch && !input.ifMatch(order.version)) {
      return { kind: 'precondition_failed', version: order.version };
    }
    const move = TRANSITIONS[input.action];
    if (!move.from.includes(order.status)) return { kind: 'invalid_transition', status: order.status };
    const after = (
      await client.query<OrderRecord>({
        name: 'orders_move_returning',
        text: SQL.move,
        values: [order.id, move.to, input.now, order.status],
      })
    ).rows[0]!;
    let pet: MovedPet | undefined;
    if (move.pet) {
      const moved = await client.query<MovedPet>({
        name: 'orders_move_pet',
        text: SQL.movePet,
        values: [order.petId, move.pet],
      });
      pet = moved.rows[0];
    }
    await this.events.appendAll(client, orderEvents(order, after, pet, input.now));
    await this.hooks.afterWrite?.(client);
    return { kind: 'done', order: after };
  }

  transition(input: TransitionInput, idempotency?: IdempotencyInput): Promise<TransitionResult> {
    return this.db.transaction(async (client) =>
      idempotency
        ? fromIdempotent(
            await this.idempotency.run(
              client,
              idempotency,
              () => this.transitionInTransaction(client, input),
              (result) => (result.kind === 'done' ? { status: 200, body: result.order } : undefined),
            ),
          )
        : this.transitionInTransaction(client, input),
    );
  }

  async get(id: number): Promise<OrderRecord | undefined> {
    const [order] = await this.db.query<OrderRecord>({ name: 'orders_get', text: SQL.get, values: [id] });
    return order;
  }

  list(query: ListOrdersQuery): Promise<OrderRecord[]> {
    const { where, values } = listShape(query);
    const conditions = [...where.map((column, i) => `${column} = $${i + 1}`), `o.id > $${where.length + 1}`];
    return this.db.query<OrderRecord>({
      // One named statement per filter shape (at most eight).
      name: `orders_list_${where.map((c) => c.replace('.', '_')).join('_') || 'all'}`,
      text: `SELECT ${ORDER_COLUMNS} ${FROM} WHERE ${conditions.join(' AND ')} ORDER BY o.id LIMIT $${where.length + 2}`,
      values: [...values, query.afterId ?? 0, query.limit],
    });
  }

  async inventory(): Promise<Inventory> {
    const rows = await this.db.query<{ status: string; n: number }>({
      name: 'orders_inventory',
      text: SQL.inventory,
    });
    const counts: Inventory = { available: 0, pending: 0, sold: 0 };
    for (const { status, n } of rows) if (status in counts) counts[status as keyof Inventory] = n;
    return counts;
  }
}
