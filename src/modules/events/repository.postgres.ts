import type { PoolClient } from 'pg';
import type { PostgresDatabase } from '../../db/postgres.js';
import type {
  EventRepository,
  ListEventsQuery,
  NewEvent,
  PostgresEventDispatch,
  StoredEvent,
  UndispatchedEvent,
} from './repository.js';
import { feedConditions } from './feed.js';

/**
 * Writers insert events without a feed position, under no lock of their own: the feed's order is given
 * after commit by the publisher (migration 015's publish_events: one short transaction numbering every
 * committed unnumbered event), and readers page by that position only. Positions are handed out in passes
 * that queue on one row lock, each above every earlier one, and only to committed events, so no event can
 * commit under a cursor already handed out, however long its transaction stays open. The choice, and what
 * happens to a long transaction, a dead publisher or a restore, is in docs/decisions.md ("Events feed on
 * PostgreSQL").
 *
 * With no enabled webhook endpoint, nobody is waiting to be sent the event: it is written as already
 * dispatched, so the dispatcher does not rewrite every event after the fact.
 */
const UNWATCHED = '(NOT EXISTS (SELECT 1 FROM webhook_endpoints WHERE enabled = 1))::int';

const COLUMNS = 'id, type, account_id, payload, created_at, traceparent, dispatched';

const APPEND = `INSERT INTO events (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, ${UNWATCHED})`;

/** Events as six parallel arrays (eventValues) from parameter $first on, each with its position `n` from 1. */
const eventArrays = (first: number): string => {
  const $ = (i: number): string => `$${first + i}`;
  return `unnest(${$(0)}::text[], ${$(1)}::text[], ${$(2)}::bigint[], ${$(3)}::text[], ${$(4)}::bigint[], ${$(5)}::text[])
    WITH ORDINALITY AS e(id, type, account_id, payload, created_at, traceparent, n)`;
};

const appendFrom = (first: number, where: string): string =>
  `INSERT INTO events (${COLUMNS})
  SELECT e.id, e.type, e.account_id, e.payload, e.created_at, e.traceparent, ${UNWATCHED}
  FROM ${eventArrays(first)} ${where} ORDER BY e.n`;

/** APPEND for several events in one statement (one round trip), in the order given. */
const APPEND_ALL = appendFrom(1, '');

/**
 * An INSERT of events for the WITH clause of another module's statement that writes, in the same statement,
 * the rows they announce: one round trip, and atomic as any statement is, where a transaction of the caller's
 * own costs a BEGIN and a COMMIT besides. The events are the parameters from $first on (eventValues, one per
 * row the statement may write); those whose position is in the `n` column of the statement's CTE named by
 * `written` are appended, in order.
 */
export function appendingEvents(first: number, written: string): string {
  return appendFrom(first, `WHERE e.n IN (SELECT n FROM ${written})`);
}

/** The parameters of APPEND_ALL and appendingEvents for `events`. */
export function eventValues(events: readonly NewEvent[]): unknown[] {
  return [
    events.map((e) => e.id),
    events.map((e) => e.type),
    events.map((e) => e.accountId),
    events.map((e) => e.payload),
    events.map((e) => e.createdAt),
    events.map((e) => e.traceparent ?? null),
  ];
}

/** Events numbered per pass at most; a larger backlog takes several passes (see publish). */
export const PUBLISH_BATCH = 5_000;

const PUBLISH = 'SELECT publish_events($1) AS n';

/** The page asked for, and whether any committed event still waits for its position (same snapshot). */
function feedPage(where: string): string {
  return `SELECT p.pending, e.seq, e.payload
    FROM (SELECT EXISTS (SELECT 1 FROM events WHERE position IS NULL) AS pending) p
    LEFT JOIN LATERAL (SELECT position AS seq, payload FROM events WHERE ${where}) e ON true
    ORDER BY e.seq`;
}

const ignore = (): void => {};

export class PostgresEventRepository implements EventRepository, PostgresEventDispatch {
  /** The pass under way in this instance, and the one asked for while it runs (see publish). */
  private passing: Promise<number> | undefined;
  private queued: Promise<number> | undefined;
  private wakeQueued = false;

  constructor(private readonly db: PostgresDatabase) {}

  /** Appends an event on `client`, which must be inside the transaction of the change it announces. */
  async append(client: PoolClient, event: NewEvent): Promise<void> {
    await client.query({
      name: 'events_append',
      text: APPEND,
      values: [
        event.id,
        event.type,
        event.accountId,
        event.payload,
        event.createdAt,
        event.traceparent ?? null,
      ],
    });
  }

  /** Appends `events` in order, in one statement; see append. */
  async appendAll(client: PoolClient, events: NewEvent[]): Promise<void> {
    if (events.length === 1) return this.append(client, events[0]!);
    if (events.length === 0) return;
    await client.query({
      name: 'events_append_all',
      text: APPEND_ALL,
      values: eventValues(events),
    });
  }

  async undispatched(client: PoolClient, limit: number): Promise<UndispatchedEvent[]> {
    const { rows } = await client.query<UndispatchedEvent>(
      `SELECT seq, id, type, account_id AS "accountId" FROM events WHERE dispatched = 0 AND position IS NOT NULL
       ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED`,
      [limit],
    );
    return rows;
  }

  async markDispatched(client: PoolClient, seqs: readonly number[]): Promise<void> {
    if (seqs.length === 0) return;
    await client.query('UPDATE events SET dispatched = 1 WHERE seq = ANY($1::bigint[])', [seqs]);
  }

  /**
   * Numbers every event committed before the call, by a pass that starts after it (this instance's pass
   * under way cannot promise that, so a call during it waits for the next one, which every call made
   * meanwhile shares). Resolves with how many events the pass numbered, in this instance or not.
   */
  publish(): Promise<number> {
    if (!this.passing) return this.startPass();
    this.queued ??= this.passing.then(ignore, ignore).then(() => {
      this.queued = undefined;
      return this.startPass();
    });
    return this.queued;
  }

  /** publish() soon, once for every call in this turn of the event loop; after a commit that wrote events. */
  wake(onError: (error: unknown) => void = ignore): void {
    if (this.wakeQueued) return;
    this.wakeQueued = true;
    setImmediate(() => {
      this.wakeQueued = false;
      this.publish().catch(onError);
    });
  }

  private startPass(): Promise<number> {
    const pass = this.passes().finally(() => {
      if (this.passing === pass) this.passing = undefined;
    });
    this.passing = pass;
    return pass;
  }

  private async passes(): Promise<number> {
    let total = 0;
    for (;;) {
      const [row] = await this.db.query<{ n: number }>({
        name: 'events_publish',
        text: PUBLISH,
        values: [PUBLISH_BATCH],
      });
      const n = row?.n ?? 0;
      total += n;
      if (n < PUBLISH_BATCH) return total;
    }
  }

  /**
   * A page by position. A short page (the reader is at the end of the feed) with committed events still
   * unnumbered publishes them and reads again, so a read sees every event committed before it began.
   */
  async list(query: ListEventsQuery): Promise<StoredEvent[]> {
    const { where, values } = feedConditions(query, (n) => `$${n}`, 'position');
    const read = async (): Promise<{ pending: boolean; events: StoredEvent[] }> => {
      const rows = await this.db.query<{ pending: boolean; seq: number | null; payload: string | null }>({
        text: feedPage(where),
        values,
      });
      const events: StoredEvent[] = [];
      for (const row of rows) {
        if (row.seq !== null) events.push({ seq: Number(row.seq), payload: row.payload! });
      }
      return { pending: rows[0]?.pending === true, events };
    };
    const page = await read();
    if (!page.pending || page.events.length >= query.limit) return page.events;
    await this.publish();
    return (await read()).events;
  }

  purge(before: number): Promise<number> {
    return this.db.execute({ text: 'DELETE FROM events WHERE created_at < $1', values: [before] });
  }
}
