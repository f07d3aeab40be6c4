import type BetterSqlite3 from 'better-sqlite3';
import { runAsPromise, type SqliteDatabase } from '../../db/sqlite.js';
import { settleIdempotent, type IdempotencyInput } from '../../db/idempotency/records.js';
import { idempotencyRepository } from '../../db/idempotency/repository.js';
import type { SqliteIdempotency } from '../../db/idempotency/repository.sqlite.js';
import { eventRepository, type SqliteEventAppender } from '../events/index.js';
import { petsWithin } from '../pets/index.js';
import type {
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
import { orderMoves } from './moves.js';
import { openOrderSql } from './statuses.js';

const ORDER_COLUMNS = `o.id, o.account_id AS accountId, a.name AS accountName, o.pet_id AS petId, o.status,
  o.version, o.created_at AS createdAt, o.updated_at AS updatedAt`;
const FROM = 'FROM orders o JOIN accounts a ON a.id = o.account_id';

/** ORDER_COLUMNS as an array row, in that order. */
type OrderRawRow = [
  id: number,
  accountId: number,
  accountName: string,
  petId: number,
  status: OrderRecord['status'],
  version: number,
  createdAt: number,
  updatedAt: number,
];

/**
 * Raw (array) rows for pages: better-sqlite3 builds row objects property by property through the V8 API,
 * which costs more than the query itself (see the pets repository); here they get one fixed shape in JS.
 */
function ordersFromRaw(rows: OrderRawRow[]): OrderRecord[] {
  const orders = new Array<OrderRecord>(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!;
    orders[i] = {
      id: row[0],
      accountId: row[1],
      accountName: row[2],
      petId: row[3],
      status: row[4],
      version: row[5],
      createdAt: row[6],
      updatedAt: row[7],
    };
  }
  return orders;
}

type Place = { accountId: number; petId: number; maxOpen: number; now: number };

/** Test seams for fault injection; empty in production. */
export interface SqliteOrderHooks {
  /** Runs inside a placement's or an action's savepoint, right after its rows and events are written. */
  afterWrite?: (db: BetterSqlite3.Database) => void;
}

/**
 * Every write runs under the write lock in a transaction begun with BEGIN IMMEDIATE (the turn's group
 * commit, SqliteDatabase.writeInTurn): the lock is taken before anything is read, so the reads that decide (the pet is available, the account's open
 * orders, the order's status) cannot change before the writes that depend on them, in this process or
 * another one on the same file; a busy database is retried whole, off the event loop.
 */
export class SqliteOrderRepository implements OrderRepository {
  private readonly db: BetterSqlite3.Database;
  private readonly idempotency: SqliteIdempotency;
  private readonly events: SqliteEventAppender;
  private readonly stmt;
  private readonly listStatements = new Map<number, BetterSqlite3.Statement<unknown[], OrderRawRow>>();
  readonly hooks: SqliteOrderHooks = {};

  constructor(private readonly database: SqliteDatabase) {
    const db = (this.db = database.db);
    this.idempotency = database.repository(idempotencyRepository);
    this.events = database.repository(eventRepository);
    this.stmt = {
      get: db.prepare<[number], OrderRecord>(`SELECT ${ORDER_COLUMNS} ${FROM} WHERE o.id = ?`),
      // Whether the account has its limit-th open order: an index probe, bounded by the limit. Not `count(*)`
      // over a `LIMIT`ed subquery: that co-routine costs several times more a run.
      atLimit: db
        .prepare<[number, number], number>(
          `SELECT 1 FROM orders WHERE account_id = ? AND ${openOrderSql()} LIMIT 1 OFFSET ? - 1`,
        )
        .pluck(true),
      // The pets' hold (openOrderHold, within.ts): a pet with an open order keeps its status and its row.
      openOrderOf: db
        .prepare<[number], number>(`SELECT 1 FROM orders WHERE pet_id = ? AND ${openOrderSql()} LIMIT 1`)
        .pluck(true),
      // The new order as `get` reads it, in the same statement (the account's name by a subquery).
      insert: db.prepare<[number, number, number, number], OrderRecord>(
        `INSERT INTO orders (account_id, pet_id, status, created_at, updated_at) VALUES (?, ?, 'placed', ?, ?)
         RETURNING id, account_id AS accountId, (SELECT name FROM accounts WHERE id = account_id) AS accountName,
           pet_id AS petId, status, version, created_at AS createdAt, updated_at AS updatedAt`,
      ),
      move: db.prepare<[string, number, number, string]>(
        'UPDATE orders SET status = ?, version = version + 1, updated_at = ? WHERE id = ? AND status = ?',
      ),
    };
  }

  /** Public for openOrderHold (within.ts): of `petIds`, those with an open order, inside a pets write. */
  openOrderPets(petIds: readonly number[]): Set<number> {
    return new Set(petIds.filter((id) => this.stmt.openOrderOf.get(id) !== undefined));
  }

  /** Public for ordersWithin (within.ts): another module's write places an order in its transaction. */
  placeInTransaction(input: Place): PlaceOrderOutcome {
    // An order that goes through costs the limit's probe and the pet's conditional move. A refusal is then
    // explained in the order the API gives them: unknown pet, then the account's limit, then the pet's status.
    const atLimit = this.stmt.atLimit.get(input.accountId, input.maxOpen) !== undefined;
    const pet = atLimit
      ? undefined
      : petsWithin.sqliteMove(this.database, input.petId, 'pending', 'available');
    if (!pet) {
      if (petsWithin.sqliteStatus(this.database, input.petId) === undefined) return { kind: 'unknown_pet' };
      if (atLimit) return { kind: 'open_order_limit', limit: input.maxOpen };
      return { kind: 'pet_not_available' };
    }
    const order = this.stmt.insert.get(input.accountId, input.petId, input.now, input.now)!;
    this.events.appendAll(orderEvents(undefined, order, pet, input.now));
    this.hooks.afterWrite?.(this.db);
    return { kind: 'placed', order };
  }

  /** Public for ordersWithin (within.ts), as placeInTransaction. */
  transitionInTransaction(input: TransitionInput): TransitionOutcome {
    const order = this.stmt.get.get(input.id);
    if (!order || (input.accountId !== undefined && order.accountId !== input.accountId)) {
      return { kind: 'not_found' };
    }
    if (input.ifMatch && !input.ifMatch(order.version)) {
      return { kind: 'precondition_failed', version: order.version };
    }
    const move = TRANSITIONS[input.action];
    if (!move.from.includes(order.status)) return { kind: 'invalid_transition', status: order.status };
    this.stmt.move.run(move.to, input.now, order.id, order.status);
    const pet = move.pet ? petsWithin.sqliteMove(this.database, order.petId, move.pet) : undefined;
    const after = this.stmt.get.get(order.id)!;
    this.events.appendAll(orderEvents(order, after, pet, input.now));
    // Other modules' rows that follow the move (applications), in this transaction: see within.ts.
    orderMoves.runSqlite(this.database, [
      { orderId: order.id, petId: order.petId, from: order.status, to: after.status, now: input.now },
    ]);
    this.hooks.afterWrite?.(this.db);
    return { kind: 'done', order: after };
  }

  /**
   * Group commit (SqliteDatabase.writeInTurn): the placements and actions of one event-loop turn share one
   * transaction, each in its own savepoint, run one after the other in arrival order under the write lock,
   * so each decides on what the ones before it wrote; every answer comes after the commit.
   */
  place(input: Place, idempotency?: IdempotencyInput): Promise<PlaceOrderResult> {
    return this.database.writeInTurn(() =>
      settleIdempotent(
        this.idempotency.run(
          idempotency,
          () => this.placeInTransaction(input),
          (result) => (result.kind === 'placed' ? { status: 201, body: result.order } : undefined),
        ),
      ),
    );
  }

  transition(input: TransitionInput, idempotency?: IdempotencyInput): Promise<TransitionResult> {
    return this.database.writeInTurn(() =>
      settleIdempotent(
        this.idempotency.run(
          idempotency,
          () => this.transitionInTransaction(input),
          (result) => (result.kind === 'done' ? { status: 200, body: result.order } : undefined),
        ),
      ),
    );
  }

  get(id: number): Promise<OrderRecord | undefined> {
    return runAsPromise(() => this.stmt.get.get(id));
  }

  readVersion(): string | undefined {
    return this.database.readVersion;
  }

  list(query: ListOrdersQuery): Promise<OrderRecord[]> {
    return runAsPromise(() => {
      // One prepared statement per filter shape and page size, the limit written into the text: a bound
      // `LIMIT ?` makes SQLite re-plan on every run (see the pets repository). Sizes are 2..101 via the API.
      // The key is a number (which filters are present, and the limit) so a cached page builds no strings.
      const limit = Number.isSafeInteger(query.limit) && query.limit > 0 ? query.limit : 1;
      const mask =
        (query.accountId === undefined ? 0 : 1) |
        (query.accountName === undefined ? 0 : 2) |
        (query.status === undefined ? 0 : 4) |
        (query.petId === undefined ? 0 : 8);
      const afterId = query.afterId ?? 0;
      if (mask === 0) return ordersFromRaw(this.listStatement(query, mask, limit).all(afterId));
      const { values } = listShape(query);
      return ordersFromRaw(this.listStatement(query, mask, limit).all(...values, afterId));
    });
  }

  private listStatement(
    query: ListOrdersQuery,
    mask: number,
    limit: number,
  ): BetterSqlite3.Statement<unknown[], OrderRawRow> {
    const key = limit * 16 + mask;
    let stmt = this.listStatements.get(key);
    if (!stmt) {
      const conditions = [...listShape(query).where.map((column) => `${column} = ?`), 'o.id > ?'].join(
        ' AND ',
      );
      stmt = this.db
        .prepare<unknown[], OrderRawRow>(
          `SELECT ${ORDER_COLUMNS} ${FROM} WHERE ${conditions} ORDER BY o.id LIMIT ${limit}`,
        )
        .raw(true);
      if (this.listStatements.size < 1024) this.listStatements.set(key, stmt);
    }
    return stmt;
  }

  async inventory(): Promise<Inventory> {
    return inventoryOf(await petsWithin.sqliteCountByStatus(this.database));
  }
}
