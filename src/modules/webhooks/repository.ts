import type { RepositoryFactory } from '../../db/database.js';
import { PostgresWebhookRepository } from './repository.postgres.js';
import { SqliteWebhookRepository } from './repository.sqlite.js';

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

export interface EndpointRecord {
  id: number;
  accountId: number;
  url: string;
  /** Event types, or `['*']` for every type. */
  events: string[];
  secret: string;
  previousSecret: string | null;
  previousExpiresAt: number | null;
  enabled: boolean;
  disabledReason: string | null;
  ordersManage: boolean;
  createdAt: number;
  updatedAt: number;
}

export interface NewEndpoint {
  url: string;
  events: string[];
  secret: string;
  ordersManage: boolean;
}

export interface EndpointChange {
  url?: string;
  events?: string[];
  enabled?: boolean;
}

export interface DeliveryRecord {
  id: number;
  endpointId: number;
  eventId: string;
  eventType: string;
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAt: number | null;
  lastStatusCode: number | null;
  lastError: string | null;
  lastAttemptAt: number | null;
  createdAt: number;
}

/** A delivery leased to one dispatcher, with what it needs to send it. */
export interface ClaimedDelivery {
  id: number;
  leaseToken: string;
  endpointId: number;
  url: string;
  /** The secrets that sign: the current one, and the previous one while its 24 h last. */
  secrets: string[];
  eventId: string;
  payload: string;
  attempts: number;
}

export type AttemptOutcome =
  | { kind: 'succeeded'; statusCode: number }
  | {
      kind: 'failed';
      statusCode: number | null;
      error: string;
      /** When to try again; null: give up (the schedule is exhausted). */
      nextAttemptAt: number | null;
      /** The receiver answered 410: disable the endpoint now. */
      gone: boolean;
    };

export interface ClaimQuery {
  now: number;
  leaseUntil: number;
  limit: number;
  busyEndpoints: number[];
  /** Lease at most this many per endpoint, less what `inFlight` says it already has (default: no cap). */
  perEndpoint?: number;
  inFlight?: Record<number, number>;
}

/** How many more deliveries of `endpointId` a claim may lease. */
export const roomFor = (q: ClaimQuery, endpointId: number): number =>
  q.perEndpoint === undefined ? Infinity : q.perEndpoint - (q.inFlight?.[endpointId] ?? 0);

/** One finished attempt to record, under the lease it was sent with. */
export interface Completion {
  id: number;
  leaseToken: string;
  outcome: AttemptOutcome;
}

export interface QueueStats {
  pending: number;
  /** created_at of the oldest pending delivery of an enabled endpoint, or null. */
  oldestCreatedAt: number | null;
}

/**
 * Webhook endpoints and deliveries, one implementation per backend (held by
 * test/contracts/webhooks.contract.test.ts):
 *
 * - Endpoint reads and writes are scoped to an account: another account's endpoint is `undefined`/false.
 * - `fanOut` takes up to `limit` undispatched events oldest first, inserts one pending delivery (due `now`)
 *   per enabled endpoint that subscribes to the type and may see it (pet.*: every account; order.*: the
 *   order's account or an endpoint created with orders:manage), and marks the events dispatched, all in one
 *   transaction. On PostgreSQL concurrent callers skip each other's events (FOR UPDATE SKIP LOCKED).
 *   Returns how many events it took.
 * - `claim` leases up to `limit` due pending deliveries of enabled endpoints not in `busyEndpoints` (their
 *   lease expired or they have none) until `leaseUntil`, at most `roomFor` per endpoint (the rows beyond
 *   are left alone, not leased); no delivery is held by two unexpired leases.
 * - `completeAll` records attempts in one transaction, in the order given, each only if its lease token still
 *   holds (a reclaimed delivery's late answer is dropped); each result says whether it held. A failure starts
 *   (or continues) the endpoint's failing streak; a success ends it; a streak older than `disableAfterMs` or a
 *   410 disables the endpoint and fails its pending deliveries.
 */
export interface WebhookRepository {
  createEndpoint(accountId: number, endpoint: NewEndpoint, now: number): Promise<EndpointRecord>;
  listEndpoints(query: { accountId?: number; afterId?: number; limit: number }): Promise<EndpointRecord[]>;
  getEndpoint(accountId: number | undefined, id: number): Promise<EndpointRecord | undefined>;
  updateEndpoint(
    accountId: number,
    id: number,
    change: EndpointChange,
    now: number,
  ): Promise<EndpointRecord | undefined>;
  deleteEndpoint(accountId: number, id: number): Promise<boolean>;
  rotateSecret(
    accountId: number,
    id: number,
    secret: string,
    previousExpiresAt: number,
    now: number,
  ): Promise<EndpointRecord | undefined>;
  listDeliveries(query: { endpointId: number; afterId?: number; limit: number }): Promise<DeliveryRecord[]>;
  /** Makes the delivery pending and due now; undefined when the endpoint has no such delivery. */
  retryDelivery(endpointId: number, deliveryId: number, now: number): Promise<DeliveryRecord | undefined>;
  fanOut(now: number, limit: number): Promise<number>;
  claim(query: ClaimQuery): Promise<ClaimedDelivery[]>;
  /** Gives a lease back unattempted (claimed beyond the endpoint's concurrency). */
  release(id: number, leaseToken: string): Promise<void>;
  completeAll(completions: Completion[], now: number, disableAfterMs: number): Promise<boolean[]>;
  stats(): Promise<QueueStats>;
}

export const webhookRepository: RepositoryFactory<WebhookRepository> = {
  sqlite: (db) => new SqliteWebhookRepository(db),
  postgres: (db) => new PostgresWebhookRepository(db),
};

/** Who may receive an event (the feed's visibility rules) and whether the endpoint subscribes to its type. */
export function endpointWants(
  endpoint: { accountId: number; events: string[]; ordersManage: boolean },
  event: { type: string; accountId: number | null },
): boolean {
  if (!endpoint.events.includes('*') && !endpoint.events.includes(event.type)) return false;
  if (!event.type.startsWith('order.')) return true;
  return endpoint.ordersManage || endpoint.accountId === event.accountId;
}

/** Storage form of an endpoint's event list: space-separated (types contain no spaces). */
export const formatEvents = (events: string[]): string => [...new Set(events)].join(' ');
export const parseEvents = (stored: string): string[] => stored.split(' ').filter((s) => s !== '');
