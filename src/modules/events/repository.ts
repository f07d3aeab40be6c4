import { randomBytes } from 'node:crypto';
import type { PoolClient } from 'pg';
import type { RepositoryFactory } from '../../db/database.js';
import { currentTraceparent } from '../../telemetry/context.js';
import { PostgresEventRepository } from './repository.postgres.js';
import { SqliteEventRepository } from './repository.sqlite.js';
import type { EventType } from './schemas.js';

/** How long events are kept (docs/api.md, "Events and webhooks"); older ones are purged whether dispatched or not. */
export const EVENT_RETENTION_MS = 30 * 24 * 3600_000;

/** Random bytes drawn in bulk: one randomBytes call per event cost more than the rest of building it. */
const RANDOM_POOL_BYTES = 4096;
let randomPool = Buffer.alloc(0);
let randomOffset = 0;
let lastIdMs = -1;
let sameMsCount = 0;

/**
 * `evt_` + 24 hex digits: the time in ms (12), a counter within that ms (4) and 4 random bytes (8). Ids of
 * one process ascend, so the events table's unique index on id grows at its end instead of at a random page
 * per event (fewer pages dirtied per commit); the random part keeps ids of several instances apart.
 */
export function newEventId(now: number): string {
  if (now === lastIdMs) sameMsCount = (sameMsCount + 1) & 0xffff;
  else {
    lastIdMs = now;
    sameMsCount = 0;
  }
  if (randomOffset + 4 > randomPool.length) {
    randomPool = randomBytes(RANDOM_POOL_BYTES);
    randomOffset = 0;
  }
  const random = randomPool.readUInt32BE(randomOffset);
  randomOffset += 4;
  return (
    'evt_' +
    Math.max(0, Math.trunc(now)).toString(16).padStart(12, '0').slice(-12) +
    sameMsCount.toString(16).padStart(4, '0') +
    random.toString(16).padStart(8, '0')
  );
}

/** An event ready to be appended: its payload is the JSON served and delivered, byte for byte. */
export interface NewEvent {
  id: string;
  type: EventType;
  /** The order's account for order.* (who may see it); null for pet.* (everyone with events:read). */
  accountId: number | null;
  payload: string;
  createdAt: number;
  /** The W3C traceparent of the request that wrote it, while tracing is on (webhook attempts link to it). */
  traceparent?: string | null;
}

/**
 * Builds an event (`{ id, type, timestamp, data: { object, previous, version } }`) at `now`, the writer's
 * injected clock, with the trace context of the request writing it (the active one unless given). `object` must be the resource as the API returns it.
 */
export function buildEvent(
  type: EventType,
  change: { object: unknown; previous?: Record<string, unknown>; version: number },
  now: number,
  accountId: number | null = null,
  traceparent = currentTraceparent(),
): NewEvent {
  const id = newEventId(now);
  const payload = JSON.stringify({
    id,
    type,
    timestamp: new Date(now).toISOString(),
    data: { object: change.object, previous: change.previous ?? {}, version: change.version },
  });
  return { id, type, accountId, payload, createdAt: now, traceparent };
}

/** The old values of the fields whose value differs between `before` and `after`. */
export function previousValues<T extends object>(before: T, after: T): Partial<T> {
  const previous: Partial<T> = {};
  for (const field of Object.keys(after) as (keyof T)[]) {
    if (before[field] !== after[field]) previous[field] = before[field];
  }
  return previous;
}

/**
 * Who reads the feed: pet.* is visible to all; order.* to the order's account, or to all with orders:manage;
 * application.* and applicant.* to the application's account while it holds applications:read, or to all
 * with applications:manage.
 */
export interface EventViewer {
  accountId: number;
  allOrders: boolean;
  /** applications:manage (absent: no). */
  allApplications?: boolean;
  /** applications:read (absent: no). */
  ownApplications?: boolean;
}

export interface ListEventsQuery {
  /** Keyset position: only events after this one in the feed's order. */
  afterSeq?: number;
  type?: EventType;
  limit: number;
  viewer: EventViewer;
}

export interface StoredEvent {
  /** The event's place in the feed's order (the cursor); see EventRepository. */
  seq: number;
  payload: string;
}

/**
 * The events repository (the outbox's reading side); test/contracts/events.contract.test.ts holds both
 * backends to it:
 *
 * - Writers (other modules' repositories) append inside their own transaction through the backend's
 *   appender below, or on PostgreSQL in the very statement that makes their change (appendingEvents), so an
 *   event commits with its change or not at all.
 * - The feed's order (`StoredEvent.seq`, the cursor) is commit order: a reader that has seen n never later
 *   finds a new event below n, and the events of one pet are in version order. SQLite has one writer, and
 *   pages by seq; PostgreSQL pages by a position its publisher gives events after they commit (`publish`).
 * - `list` returns events after `afterSeq` in that order, at most `limit`, of `type` when given, that the
 *   viewer may see; every event committed before the call is among those it can return.
 * - `publish` numbers the events committed before the call for the feed (SQLite: nothing to do) and
 *   resolves with how many; `wake` asks for it soon (after a commit), once per turn of the event loop.
 * - `purge(before)` deletes events created before `before` (epoch ms), dispatched or not; returns how many.
 *   SQLite deletes the oldest events up to the first one created at or after `before` (see its purge).
 * - The webhooks' fan-out takes undispatched events and marks them dispatched through the backend's dispatch
 *   interface below, inside its own transaction, so the deliveries commit with the mark or not at all.
 * - Errors reaching the database reject with `StorageUnavailableError`.
 */
export interface EventRepository {
  list(query: ListEventsQuery): Promise<StoredEvent[]>;
  publish(): Promise<number>;
  wake(onError?: (error: unknown) => void): void;
  purge(before: number): Promise<number>;
}

/**
 * How another module appends events as part of its own write on SQLite: synchronously, inside the caller's
 * better-sqlite3 transaction on the one connection (so the transaction needs no handle).
 */
export interface SqliteEventAppender {
  append(event: NewEvent): void;
  /** Appends in order, as `append` does. */
  appendAll(events: readonly NewEvent[]): void;
}

/** The same on PostgreSQL: on the client of the caller's transaction (`db.transaction`). */
export interface PostgresEventAppender {
  append(client: PoolClient, event: NewEvent): Promise<void>;
  /** Appends in order, as `append` does. */
  appendAll(client: PoolClient, events: NewEvent[]): Promise<void>;
}

/** An event the webhooks' fan-out has not turned into deliveries yet. */
export interface UndispatchedEvent {
  seq: number;
  id: string;
  type: string;
  accountId: number | null;
}

/**
 * How the webhooks' fan-out takes events and marks them dispatched on SQLite: synchronously, inside the
 * caller's transaction on the one connection. `undispatched` answers the oldest first, at most `limit`.
 */
export interface SqliteEventDispatch {
  anyUndispatched(): boolean;
  undispatched(limit: number): UndispatchedEvent[];
  markDispatched(seq: number): void;
}

/**
 * The same on PostgreSQL, on the client of the caller's transaction: `undispatched` takes only events the
 * feed has numbered (see `publish`) and locks them until that transaction ends, skipping those another holds
 * (FOR UPDATE SKIP LOCKED), so concurrent fan-outs never take the same event.
 */
export interface PostgresEventDispatch {
  undispatched(client: PoolClient, limit: number): Promise<UndispatchedEvent[]>;
  markDispatched(client: PoolClient, seqs: readonly number[]): Promise<void>;
}

export const eventRepository: RepositoryFactory<
  EventRepository & SqliteEventAppender & SqliteEventDispatch,
  EventRepository & PostgresEventAppender & PostgresEventDispatch
> = {
  sqlite: (db) => new SqliteEventRepository(db),
  postgres: (db) => new PostgresEventRepository(db),
};
