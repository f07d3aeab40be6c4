import type BetterSqlite3 from 'better-sqlite3';
import { runAsPromise, type SqliteDatabase } from '../../db/sqlite.js';
import type {
  EventRepository,
  ListEventsQuery,
  NewEvent,
  SqliteEventDispatch,
  StoredEvent,
  UndispatchedEvent,
} from './repository.js';
import { feedConditions } from './feed.js';

export class SqliteEventRepository implements EventRepository, SqliteEventDispatch {
  private readonly db: BetterSqlite3.Database;
  private readonly insert: BetterSqlite3.Statement<
    [string, string, number | null, string, number, string | null]
  >;
  /** appendAll's statement for two events (an order's change and its pet's), the one multi-row case. */
  private readonly insertTwo: BetterSqlite3.Statement<unknown[]>;
  private readonly purgeStatement: BetterSqlite3.Statement<[number]>;
  /** The webhooks' fan-out runs these several times per turn under load: prepared once. */
  private readonly dispatch: {
    any: BetterSqlite3.Statement<[], number>;
    undispatched: BetterSqlite3.Statement<[number], UndispatchedEvent>;
    mark: BetterSqlite3.Statement<[number]>;
  };
  /** One prepared feed statement per filter shape (4 at most). */
  private readonly feeds = new Map<string, BetterSqlite3.Statement<unknown[], StoredEvent>>();

  constructor(private readonly database: SqliteDatabase) {
    const db = (this.db = database.db);
    // With no enabled webhook endpoint, nobody is waiting to be sent the event: it is written as already
    // dispatched, so the dispatcher does not rewrite every event (and its partial index) after the fact.
    const row = '(?, ?, ?, ?, ?, ?, NOT EXISTS (SELECT 1 FROM webhook_endpoints WHERE enabled = 1))';
    const insert =
      'INSERT INTO events (id, type, account_id, payload, created_at, traceparent, dispatched) VALUES ';
    this.insert = db.prepare(insert + row);
    // Rows are inserted in the order written, so seq follows it.
    this.insertTwo = db.prepare(`${insert}${row}, ${row}`);
    // The prefix of the seq order created before the cutoff: the subquery walks the table from its oldest
    // row and stops at the first one to keep, so a purge costs what it deletes, without an index on
    // created_at (one writer, so created_at follows seq; an event committed out of clock order by another
    // process goes with the next purge after the events before it).
    this.purgeStatement = db.prepare(
      `DELETE FROM events WHERE seq < coalesce(
         (SELECT seq FROM events WHERE created_at >= ? ORDER BY seq LIMIT 1),
         (SELECT coalesce(max(seq), 0) + 1 FROM events))`,
    );
    this.dispatch = {
      any: db.prepare<[], number>('SELECT 1 FROM events WHERE dispatched = 0 LIMIT 1').pluck(true),
      undispatched: db.prepare<[number], UndispatchedEvent>(
        'SELECT seq, id, type, account_id AS accountId FROM events WHERE dispatched = 0 ORDER BY seq LIMIT ?',
      ),
      mark: db.prepare<[number]>('UPDATE events SET dispatched = 1 WHERE seq = ?'),
    };
  }

  /**
   * Appends an event. Must run inside the caller's transaction on this connection (better-sqlite3 is
   * synchronous and SQLite has one writer), so the event commits or rolls back with the change, and seq
   * order is commit order.
   */
  append(event: NewEvent): void {
    this.insert.run(
      event.id,
      event.type,
      event.accountId,
      event.payload,
      event.createdAt,
      event.traceparent ?? null,
    );
  }

  /** Appends events in order, as append does; two in one statement (each statement costs its own call). */
  appendAll(events: readonly NewEvent[]): void {
    if (events.length === 2) {
      const [a, b] = events as [NewEvent, NewEvent];
      this.insertTwo.run(
        a.id,
        a.type,
        a.accountId,
        a.payload,
        a.createdAt,
        a.traceparent ?? null,
        b.id,
        b.type,
        b.accountId,
        b.payload,
        b.createdAt,
        b.traceparent ?? null,
      );
      return;
    }
    for (const event of events) this.append(event);
  }

  anyUndispatched(): boolean {
    return this.dispatch.any.get() !== undefined;
  }

  undispatched(limit: number): UndispatchedEvent[] {
    return this.dispatch.undispatched.all(limit);
  }

  markDispatched(seq: number): void {
    this.dispatch.mark.run(seq);
  }

  list(query: ListEventsQuery): Promise<StoredEvent[]> {
    return runAsPromise(() => {
      const { where, values } = feedConditions(query, () => '?');
      let stmt = this.feeds.get(where);
      if (!stmt) {
        stmt = this.db.prepare<unknown[], StoredEvent>(`SELECT seq, payload FROM events WHERE ${where}`);
        this.feeds.set(where, stmt);
      }
      return stmt.all(...values);
    });
  }

  /** Nothing to number: one writer commits at a time, so seq order is already commit order. */
  publish(): Promise<number> {
    return Promise.resolve(0);
  }

  wake(): void {}

  purge(before: number): Promise<number> {
    return this.database.write(() => this.purgeStatement.run(before).changes);
  }
}
