import type { PoolClient } from 'pg';
import type { PostgresDatabase } from '../../db/postgres.js';
import {
  feedConditions,
  type EventRepository,
  type ListEventsQuery,
  type NewEvent,
  type StoredEvent,
} from './repository.js';

/**
 * The advisory lock makes seq order commit order. Identity values are handed out at insert, not at commit:
 * without it, a transaction that took seq 9 and commits after another's seq 10 would appear behind a poller
 * that already followed its cursor past 10, and the poller would never see it. Held from the append until
 * the end of the transaction (the rest of a write is one or two statements and the commit), it serialises
 * only that tail of concurrent writes.
 *
 * With no enabled webhook endpoint, nobody is waiting to be sent the event: it is written as already
 * dispatched, so the dispatcher does not rewrite every event after the fact.
 */
const UNWATCHED = '(NOT EXISTS (SELECT 1 FROM webhook_endpoints WHERE enabled = 1))::int';

const APPEND = `WITH lock AS (SELECT pg_advisory_xact_lock(hashtextextended($6, 0)))
  INSERT INTO events (id, type, account_id, payload, created_at, traceparent, dispatched)
  SELECT $1, $2, $3, $4, $5, $7, ${UNWATCHED} FROM lock`;

/** APPEND for several events in one statement (one round trip), in the order given. */
const APPEND_ALL = `WITH lock AS (SELECT pg_advisory_xact_lock(hashtextextended($6, 0)))
  INSERT INTO events (id, type, account_id, payload, created_at, traceparent, dispatched)
  SELECT e.id, e.type, e.account_id, e.payload, e.created_at, e.traceparent, ${UNWATCHED}
  FROM lock, unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::bigint[], $7::text[]) WITH ORDINALITY
    AS e(id, type, account_id, payload, created_at, traceparent, n)
  ORDER BY e.n`;

export class PostgresEventRepository implements EventRepository {
  private readonly lockKey: string;

  constructor(private readonly db: PostgresDatabase) {
    this.lockKey = db.lockKey('events');
  }

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
        this.lockKey,
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
      values: [
        events.map((e) => e.id),
        events.map((e) => e.type),
        events.map((e) => e.accountId),
        events.map((e) => e.payload),
        events.map((e) => e.createdAt),
        this.lockKey,
        events.map((e) => e.traceparent ?? null),
      ],
    });
  }

  async list(query: ListEventsQuery): Promise<StoredEvent[]> {
    const { where, values } = feedConditions(query, (n) => `$${n}`);
    const rows = await this.db.query<{ seq: string; payload: string }>({
      text: `SELECT seq, payload FROM events WHERE ${where}`,
      values,
    });
    return rows.map((row) => ({ seq: Number(row.seq), payload: row.payload }));
  }

  purge(before: number): Promise<number> {
    return this.db.execute({ text: 'DELETE FROM events WHERE created_at < $1', values: [before] });
  }
}
