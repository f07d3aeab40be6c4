import type { RepositoryFactory } from '../../db/database.js';
import type { Scope } from '../accounts/index.js';
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
  /** Whether it asked for every account's order events (its creating key had orders:manage). */
  ordersManage: boolean;
  /**
   * What the key that made it, or last changed its url or events, could use (effective scopes); null for
   * endpoints made before this was recorded. It never receives more than this.
   */
  grantedScopes: Scope[] | null;
  createdAt: number;
  updatedAt: number;
}

export interface NewEndpoint {
  url: string;
  events: string[];
  secret: string;
  ordersManage: boolean;
  grantedScopes: Scope[];
}

export interface EndpointChange {
  url?: string;
  events?: string[];
  enabled?: boolean;
  grantedScopes?: Scope[];
}

export type CreateEndpointResult =
  | { kind: 'created'; endpoint: EndpointRecord }
  /** The account already holds `limit` endpoints. */
  | { kind: 'limit'; limit: number }
  /** The account already has an endpoint with this URL. */
  | { kind: 'exists' };

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
  /** The endpoint's account: the dispatcher counts each account's deliveries in flight. */
  accountId: number;
  url: string;
  /** The secrets that sign: the current one, and the previous one while its 24 h last. */
  secrets: string[];
  eventId: string;
  payload: string;
  attempts: number;
  /** The W3C traceparent of the request that wrote the event, when it was traced (the attempt links to it). */
  traceparent: string | null;
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
  /** Lease at most this many per account, less what `accountInFlight` says it has (default: no cap). */
  perAccount?: number;
  accountInFlight?: Record<number, number>;
}

/** A due delivery a claim may lease, before the shares are applied (see fairOrder). */
export interface ClaimCandidate {
  id: number;
  endpointId: number;
  accountId: number;
  nextAttemptAt: number;
}

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
 * - `createEndpoint` refuses beyond `maxEndpoints` per account and a URL the account already has, also when
 *   two requests race (SQLite: one writer; PostgreSQL: the account row is locked, and a unique index holds the
 *   URL); `updateEndpoint` answers 'exists' for a URL another endpoint of the account has.
 * - `fanOut` takes up to `limit` undispatched events oldest first and inserts one pending delivery (due `now`)
 *   per enabled endpoint that `endpointWants` the event, judged by its account's live keys at that moment,
 *   then marks the event dispatched. Each transaction writes at most `maxRows` deliveries: an event whose
 *   fan-out is larger is continued (after the last endpoint id done) in the next transaction and marked
 *   dispatched with its last part; a crash in between does its fan-out again, and the unique (endpoint,
 *   event) keeps one delivery each. On PostgreSQL concurrent callers skip each other's events (FOR UPDATE
 *   SKIP LOCKED). Returns how many events it marked dispatched.
 * - `unauthorized` answers which of the given deliveries their endpoint's account may no longer receive
 *   (`endpointMay` with its live keys now); `skip` fails such a leased delivery unsent, as `not_authorized`,
 *   without counting an attempt or a failing streak.
 * - `liveScopes` is what an account's active keys (not revoked, not expired at `now`) may use together.
 * - `claim` leases up to `limit` due pending deliveries of enabled endpoints not in `busyEndpoints` (their
 *   lease expired or they have none) until `leaseUntil`, at most `roomFor` per endpoint and `perAccount`
 *   per account, chosen as `fairOrder` ranks each endpoint's oldest (the rows beyond are left alone, not
 *   leased); no delivery is held by two unexpired leases. One endpoint's or account's backlog never stands
 *   in front of another's due rows.
 * - `completeAll` records attempts in one transaction, in the order given, each only if its lease token still
 *   holds (a reclaimed delivery's late answer is dropped); each result says whether it held. A failure starts
 *   (or continues) the endpoint's failing streak; a success ends it; a streak older than `disableAfterMs` or a
 *   410 disables the endpoint and fails its pending deliveries.
 */
export interface WebhookRepository {
  createEndpoint(
    accountId: number,
    endpoint: NewEndpoint,
    now: number,
    maxEndpoints: number,
  ): Promise<CreateEndpointResult>;
  listEndpoints(query: { accountId?: number; afterId?: number; limit: number }): Promise<EndpointRecord[]>;
  getEndpoint(accountId: number | undefined, id: number): Promise<EndpointRecord | undefined>;
  updateEndpoint(
    accountId: number,
    id: number,
    change: EndpointChange,
    now: number,
  ): Promise<EndpointRecord | 'exists' | undefined>;
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
  fanOut(now: number, limit: number, maxRows?: number): Promise<number>;
  unauthorized(deliveryIds: number[], now: number): Promise<number[]>;
  skip(deliveries: { id: number; leaseToken: string }[], now: number): Promise<void>;
  liveScopes(accountId: number, now: number): Promise<ReadonlySet<Scope>>;
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
