import type { PoolClient } from 'pg';
import type { PostgresDatabase } from '../../db/postgres.js';
import { TurnBatch, type Settled } from '../../db/turn-batch.js';
import { afterEachWrite, sharedThenAlone } from '../../db/turn-writes.postgres.js';
import { settleIdempotent, type IdempotencyInput } from '../../db/idempotency/records.js';
import { idempotencyRepository } from '../../db/idempotency/repository.js';
import type { PostgresIdempotency } from '../../db/idempotency/repository.postgres.js';
import { eventRepository, type PostgresEventAppender } from '../events/index.js';
import { petsWithin, type PetRow, type PetStatus } from '../pets/index.js';
import type {
  MovedPet,
  Replayable,
  ListOrdersQuery,
  OrderRecord,
  OrderRepository,
  PlaceOrderOutcome,
  PlaceOrderResult,
  TransitionInput,
  TransitionOutcome,
  TransitionResult,
} from './repository.js';
import { inventoryOf, listShape, orderEvents, TRANSITIONS } from './decisions.js';
import type { Inventory } from './schemas.js';
import { moveOf, orderMoves } from './moves.js';
import { isOpen, openOrderSql } from './statuses.js';

const ORDER_COLUMNS = `o.id, o.account_id AS "accountId", a.name AS "accountName", o.pet_id AS "petId",
  o.status, o.version, o.created_at AS "createdAt", o.updated_at AS "updatedAt"`;
const FROM = 'FROM orders o JOIN accounts a ON a.id = o.account_id';

const SQL = {
  get: `SELECT ${ORDER_COLUMNS} ${FROM} WHERE o.id = $1`,
  // The pets of a batch's writes (placements' and the orders' of actions) are locked in id order (by
  // petsWithin), then the orders in id order, then the accounts of the placements in id order: every writer
  // of orders (a turn's batch or a single write, on any instance) takes its locks in this one order, so none
  // can deadlock on them. An order's pet never changes, so reading it unlocked to know which pet to lock is
  // safe.
  petsOf: 'SELECT pet_id FROM orders WHERE id = ANY($1::bigint[])',
  lockOrders: `SELECT ${ORDER_COLUMNS} ${FROM} WHERE o.id = ANY($1::bigint[]) ORDER BY o.id FOR UPDATE OF o`,
  // Serialises each account's placements (the open-order count below cannot be passed by two at once). NO
  // KEY UPDATE rather than UPDATE: it still excludes the same lock, but not the key-share locks that foreign
  // keys to the account (idempotency records, orders) take in other transactions.
  lockAccounts: 'SELECT id, name FROM accounts WHERE id = ANY($1::bigint[]) ORDER BY id FOR NO KEY UPDATE',
  // A statement of its own after the lock, so it sees every order committed by the lock's previous holder.
  // Bounded by the limit: never counts further than it needs to decide.
  openCounts: `SELECT q.id, (SELECT count(*)::int FROM (SELECT 1 FROM orders
      WHERE account_id = q.id AND ${openOrderSql()} LIMIT q.lim) open) AS n
    FROM unnest($1::bigint[], $2::int[]) AS q(id, lim)`,
  updateOrders: `UPDATE orders o SET status = u.status, version = u.version, updated_at = u.updated_at
    FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::bigint[]) AS u(id, status, version, updated_at)
    WHERE o.id = u.id`,
  // The new orders as `get` reads them; `n` says which input each is (ids drawn in the CTE, as RETURNING
  // cannot see the input's position).
  insertOrders: `WITH input AS (
      SELECT e.n, e.account_id, e.pet_id, e.created_at, nextval(pg_get_serial_sequence('orders', 'id')) AS id
      FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) WITH ORDINALITY AS e(account_id, pet_id, created_at, n)
    ), o AS (
      INSERT INTO orders (id, account_id, pet_id, status, created_at, updated_at) OVERRIDING SYSTEM VALUE
      SELECT id, account_id, pet_id, 'placed', created_at, created_at FROM input ORDER BY n
      RETURNING *
    )
    SELECT input.n, ${ORDER_COLUMNS} FROM o JOIN input USING (id) JOIN accounts a ON a.id = o.account_id`,
} as const;

type Place = { accountId: number; petId: number; maxOpen: number; now: number };

/** A placement or an action without an Idempotency-Key, as the turn's batch receives it. */
type Write = { place: Place } | { act: TransitionInput };
type WriteOutcome = PlaceOrderOutcome | TransitionOutcome;

/** A write of a batch as decided on the locked rows, with what its statements and events need. */
interface Decided {
  outcome: WriteOutcome;
  /** A placement that goes through (its outcome is `placed` once its order is inserted). */
  place?: Place;
  /** The order before an action that goes through. */
  before?: OrderRecord;
  /** The write's pet as the write left it, for its event. */
  pet?: MovedPet;
}

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
  /** Placements and actions without an Idempotency-Key, one transaction per turn (see writeAll). */
  private readonly writes = new TurnBatch((inputs: Write[]) => this.writeAll(inputs));
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

  place(input: Place, idempotency?: IdempotencyInput): Promise<PlaceOrderResult> {
    const write: Write = { place: input };
    if (idempotency === undefined) return this.writes.add(write) as Promise<PlaceOrderOutcome>;
    // One write's outcome is of its own kind (writeShared answers a placement as a placement).
    return this.writeAlone(write, idempotency) as Promise<PlaceOrderResult>;
  }

  transition(input: TransitionInput, idempotency?: IdempotencyInput): Promise<TransitionResult> {
    const write: Write = { act: input };
    if (idempotency === undefined) return this.writes.add(write) as Promise<TransitionOutcome>;
    return this.writeAlone(write, idempotency) as Promise<TransitionResult>;
  }

  /**
   * The placements and actions of one turn without an Idempotency-Key, in one transaction sharing its
   * statements (see writeShared): each answered only after that commit, with its own outcome; one failing
   * write fails alone and an unreachable database fails them all (sharedThenAlone).
   */
  private writeAll(inputs: Write[]): Promise<Settled<WriteOutcome>[]> {
    return sharedThenAlone(
      this.db,
      inputs,
      // Without an idempotency key there is nothing to replay: the outcome is the write's own.
      (write) => this.writeAlone(write, undefined) as Promise<WriteOutcome>,
      (client, writes, failed) => this.writeShared(client, writes, failed),
    );
  }

  /** One write in its own transaction, under its idempotency record when there is one. */
  private async writeAlone(
    write: Write,
    idempotency: IdempotencyInput | undefined,
  ): Promise<Replayable<WriteOutcome>> {
    const once = async (client: PoolClient): Promise<WriteOutcome> =>
      (await this.writeShared(client, [write], new Map()))[0]!;
    try {
      return await this.db.transaction(async (client) =>
        idempotency
          ? settleIdempotent(
              await this.idempotency.run(
                client,
                idempotency,
                () => once(client),
                (result) =>
                  result.kind === 'placed'
                    ? { status: 201, body: result.order }
                    : result.kind === 'done'
                      ? { status: 200, body: result.order }
                      : undefined,
              ),
            )
          : once(client),
      );
    } catch (error) {
      // The pet's row lock already refuses a held pet; the index is the backstop should any other path ever
      // open an order for it.
      if ('place' in write && isOpenOrderConflict(error)) return { kind: 'pet_not_available' };
      throw error;
    }
  }

  /**
   * Placements and actions in one transaction, in as many statements as one write alone needs: the rows
   * they touch locked in the one order (lockPets), each write decided in turn against the locked rows as the
   * writes before it left them (so two placements for one pet give one 201, two actions on one order apply
   * one move, and one account's placements never pass its limit), then one update of the pets, one of the
   * orders, one insert of the new orders and one append of all their events.
   */
  private async writeShared(
    client: PoolClient,
    writes: Write[],
    failed: Map<number, unknown>,
  ): Promise<WriteOutcome[]> {
    const placements = writes.flatMap((w) => ('place' in w ? [w.place] : []));
    const actions = writes.flatMap((w) => ('act' in w ? [w.act] : []));
    const actionPets =
      actions.length === 0
        ? []
        : (
            await client.query<{ pet_id: string | number }>({
              name: 'orders_pets_of',
              text: SQL.petsOf,
              values: [actions.map((a) => a.id)],
            })
          ).rows.map((row) => Number(row.pet_id));
    const pets = await petsWithin.postgresLockRows(client, [
      ...placements.map((p) => p.petId),
      ...actionPets,
    ]);
    const orders = new Map<number, OrderRecord>();
    if (actions.length > 0) {
      const locked = await client.query<OrderRecord>({
        name: 'orders_lock_orders',
        text: SQL.lockOrders,
        values: [[...new Set(actions.map((a) => a.id))].sort((a, b) => a - b)],
      });
      for (const row of locked.rows) orders.set(Number(row.id), { ...row, version: Number(row.version) });
    }
    const accounts = new Map<number, { name: string; open: number }>();
    if (placements.length > 0) {
      const limits = new Map<number, number>();
      for (const p of placements) limits.set(p.accountId, Math.max(limits.get(p.accountId) ?? 0, p.maxOpen));
      const ids = [...limits.keys()].sort((a, b) => a - b);
      const locked = await client.query<{ id: number; name: string }>({
        name: 'orders_lock_accounts',
        text: SQL.lockAccounts,
        values: [ids],
      });
      const counts = await client.query<{ id: number; n: number }>({
        name: 'orders_open_counts',
        text: SQL.openCounts,
        values: [ids, ids.map((id) => limits.get(id)!)],
      });
      const open = new Map(counts.rows.map((row) => [Number(row.id), row.n]));
      for (const { id, name } of locked.rows)
        accounts.set(Number(id), { name, open: open.get(Number(id)) ?? 0 });
    }

    // Each write decided in turn, in the order a write alone gives its refusals.
    const changedPets = new Map<number, PetRow>();
    const changedOrders = new Map<number, OrderRecord>();
    const decided = writes.map((write): Decided => {
      if ('place' in write) {
        const { petId, accountId, maxOpen } = write.place;
        const pet = pets.get(petId);
        if (!pet) return { outcome: { kind: 'unknown_pet' } };
        const account = accounts.get(accountId);
        // The account of an authenticated request exists; should it be gone, the insert refuses it.
        if (account && account.open >= maxOpen)
          return { outcome: { kind: 'open_order_limit', limit: maxOpen } };
        if (pet.status !== 'available') return { outcome: { kind: 'pet_not_available' } };
        if (account) account.open++;
        const moved = this.movePet(pet, 'pending', changedPets);
        return { outcome: { kind: 'pet_not_available' }, place: write.place, pet: moved };
      }
      const input = write.act;
      const order = orders.get(input.id);
      if (!order || (input.accountId !== undefined && order.accountId !== input.accountId)) {
        return { outcome: { kind: 'not_found' } };
      }
      if (input.ifMatch && !input.ifMatch(order.version)) {
        return { outcome: { kind: 'precondition_failed', version: order.version } };
      }
      const move = TRANSITIONS[input.action];
      if (!move.from.includes(order.status))
        return { outcome: { kind: 'invalid_transition', status: order.status } };
      const after: OrderRecord = {
        ...order,
        status: move.to,
        version: order.version + 1,
        updatedAt: input.now,
      };
      orders.set(order.id, after);
      changedOrders.set(order.id, after);
      const account = accounts.get(order.accountId);
      if (account && isOpen(order.status) && !isOpen(after.status)) account.open--;
      const pet = pets.get(order.petId);
      const moved = move.pet && pet ? this.movePet(pet, move.pet, changedPets) : undefined;
      return { outcome: { kind: 'done', order: after }, before: order, pet: moved };
    });

    await petsWithin.postgresWriteStatuses(client, [...changedPets.values()]);
    if (changedOrders.size > 0) {
      const moved = [...changedOrders.values()].sort((a, b) => a.id - b.id);
      await client.query({
        name: 'orders_update_orders',
        text: SQL.updateOrders,
        values: [
          moved.map((o) => o.id),
          moved.map((o) => o.status),
          moved.map((o) => o.version),
          moved.map((o) => o.updatedAt),
        ],
      });
    }
    const placing = decided.flatMap((d) => (d.place ? [d.place] : []));
    if (placing.length > 0) {
      const inserted = await client.query<OrderRecord & { n: number | string }>({
        name: 'orders_insert_all',
        text: SQL.insertOrders,
        values: [placing.map((p) => p.accountId), placing.map((p) => p.petId), placing.map((p) => p.now)],
      });
      const placed: OrderRecord[] = [];
      for (const { n, ...order } of inserted.rows)
        placed[Number(n) - 1] = { ...order, version: Number(order.version) };
      let k = 0;
      for (const d of decided) if (d.place) d.outcome = { kind: 'placed', order: placed[k++]! };
    }
    const events = decided.flatMap((d) =>
      d.outcome.kind === 'placed' || d.outcome.kind === 'done'
        ? orderEvents(d.before, d.outcome.order, d.pet, d.place?.now ?? d.outcome.order.updatedAt)
        : [],
    );
    await this.events.appendAll(client, events);
    // Other modules' rows that follow the moves (applications), in this transaction: see within.ts.
    const moved = decided.flatMap((d) => (d.outcome.kind === 'done' && d.before ? [d] : []));
    await orderMoves.runPostgres(
      this.db,
      client,
      moved.map((d) => moveOf(d.before!, d.outcome)),
    );
    await afterEachWrite(
      decided,
      (d) => d.outcome.kind === 'placed' || d.outcome.kind === 'done',
      this.hooks.afterWrite,
      client,
      failed,
    );
    return decided.map((d) => d.outcome);
  }

  /** Moves a locked pet within a batch: its new status and version, and the pet as the event shows it. */
  private movePet(pet: PetRow, status: PetStatus, changed: Map<number, PetRow>): MovedPet {
    const moved: MovedPet = { ...pet, status, version: pet.version + 1, previousStatus: pet.status };
    pet.status = status;
    pet.version = moved.version;
    changed.set(pet.id, pet);
    return moved;
  }

  /** Placements inside another module's transaction (ordersWithin, within.ts), decided in turn. */
  async placeWithin(client: PoolClient, inputs: Place[]): Promise<PlaceOrderOutcome[]> {
    if (inputs.length === 0) return [];
    const writes = inputs.map((place): Write => ({ place }));
    return (await this.writeShared(client, writes, new Map())) as PlaceOrderOutcome[];
  }
  /** An action inside another module's transaction (ordersWithin, within.ts). */
  async transitionWithin(client: PoolClient, input: TransitionInput): Promise<TransitionOutcome> {
    return (await this.writeShared(client, [{ act: input }], new Map()))[0] as TransitionOutcome;
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
    return inventoryOf(await petsWithin.postgresCountByStatus(this.db));
  }
}
