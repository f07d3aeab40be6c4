/** The webhooks' rules, shared by both backends (which do the I/O only). */
import type { Scope } from '../accounts/index.js';
import type {
  AttemptOutcome,
  ClaimCandidate,
  ClaimQuery,
  DeliveryStatus,
  EndpointChange,
  EndpointRecord,
  NewEndpoint,
} from './repository.js';
import { formatEvents, formatGranted } from './rows.js';

/** What a delivery skipped at send time says: the account no longer holds the authority (see `unauthorized`). */
export const NOT_AUTHORIZED = 'not_authorized';

/** What a pending delivery says when its endpoint was disabled before it could be sent. */
export const ENDPOINT_DISABLED = 'endpoint_disabled';

/** Why an endpoint its account turned off is disabled. */
export const DISABLED_BY_ACCOUNT = 'disabled by the account';

/** Delivery rows one fan-out transaction writes at most (whatever the number of accounts and endpoints). */
export const FAN_OUT_ROWS = 1000;

/**
 * Whether a finished attempt disables its endpoint, and why: a `410 Gone` at once, or failures without a
 * success for `disableAfterMs` (3 days in production) since the streak began. `null`: it stays enabled.
 * Both backends record the attempt and the streak, then ask this.
 */
export function disableReason(attempt: {
  gone: boolean;
  failingSince: number | null | undefined;
  now: number;
  disableAfterMs: number;
}): string | null {
  if (attempt.gone) return 'the receiver answered 410 Gone';
  const since = attempt.failingSince;
  if (since !== null && since !== undefined && attempt.now - since >= attempt.disableAfterMs)
    return 'deliveries failed for 3 days';
  return null;
}

/** An endpoint's row as creating it writes it (the storage forms of rows.ts). */
export interface EndpointInsert {
  url: string;
  events: string;
  secret: string;
  ordersManage: 0 | 1;
  grantedScopes: string | null;
  createdAt: number;
  updatedAt: number;
}

/**
 * Creating an endpoint, given how many the account holds (read under the backend's per-account
 * serialisation): refused at `max`, else the row to insert. A URL the account already has is refused by the
 * unique index, which also holds when two creations race.
 */
export function endpointCreation(
  held: number,
  max: number,
  endpoint: NewEndpoint,
  now: number,
): { kind: 'limit'; limit: number } | { kind: 'insert'; row: EndpointInsert } {
  if (held >= max) return { kind: 'limit', limit: max };
  return {
    kind: 'insert',
    row: {
      url: endpoint.url,
      events: formatEvents(endpoint.events),
      secret: endpoint.secret,
      ordersManage: endpoint.ordersManage ? 1 : 0,
      grantedScopes: formatGranted(endpoint.grantedScopes),
      createdAt: now,
      updatedAt: now,
    },
  };
}

/**
 * What a change of an endpoint writes: null keeps a column. Turning it off records why (DISABLED_BY_ACCOUNT);
 * turning it on clears the reason and the failing streak, so the endpoint gets its full 3 days again.
 */
export interface EndpointUpdate {
  url: string | null;
  events: string | null;
  grantedScopes: string | null;
  enabled: 0 | 1 | null;
  /** Whether `disabledReason` replaces the stored reason. */
  setReason: 0 | 1;
  disabledReason: string | null;
  /** 1: the failing streak ends. */
  clearFailingSince: 0 | 1;
  updatedAt: number;
}

export function endpointUpdate(change: EndpointChange, now: number): EndpointUpdate {
  const enabled = change.enabled === undefined ? null : change.enabled ? 1 : 0;
  return {
    url: change.url ?? null,
    events: change.events ? formatEvents(change.events) : null,
    grantedScopes: formatGranted(change.grantedScopes),
    enabled,
    setReason: enabled === null ? 0 : 1,
    disabledReason: enabled === 0 ? DISABLED_BY_ACCOUNT : null,
    clearFailingSince: enabled === 1 ? 1 : 0,
    updatedAt: now,
  };
}

/**
 * What a finished attempt writes on its delivery: a success is final; a failure stays pending until its
 * next attempt, and fails for good when the schedule has none left (`nextAttemptAt` null).
 */
export function attemptRecord(outcome: AttemptOutcome): {
  status: DeliveryStatus;
  nextAttemptAt: number | null;
  statusCode: number | null;
  error: string | null;
} {
  if (outcome.kind === 'succeeded') {
    return { status: 'succeeded', nextAttemptAt: null, statusCode: outcome.statusCode, error: null };
  }
  return {
    status: outcome.nextAttemptAt === null ? 'failed' : 'pending',
    nextAttemptAt: outcome.nextAttemptAt,
    statusCode: outcome.statusCode,
    error: outcome.error,
  };
}

/** How many more deliveries of `endpointId` a claim may lease. */
export const roomFor = (q: ClaimQuery, endpointId: number): number =>
  q.perEndpoint === undefined ? Infinity : q.perEndpoint - (q.inFlight?.[endpointId] ?? 0);

/**
 * The candidates a claim leases, in order: each account and, within it, each endpoint is ranked by what it
 * has in flight plus what it would take, so the least loaded go first (an account or endpoint with nothing
 * in flight before one holding slots, whatever the age of their rows), at most `perAccount` per account,
 * at most `limit` in all. The candidates come at most `roomFor` per endpoint, oldest first.
 */
export function fairOrder<C extends ClaimCandidate>(q: ClaimQuery, candidates: readonly C[]): C[] {
  const byAge = (a: C, b: C) => a.nextAttemptAt - b.nextAttemptAt || a.id - b.id;
  const endpointRank = new Map<number, number>();
  const ranked = [...candidates].sort(byAge).map((c) => {
    const rank = (endpointRank.get(c.endpointId) ?? q.inFlight?.[c.endpointId] ?? 0) + 1;
    endpointRank.set(c.endpointId, rank);
    return { c, endpoint: rank, account: 0 };
  });
  ranked.sort((a, b) => a.endpoint - b.endpoint || byAge(a.c, b.c));
  const accountRank = new Map<number, number>();
  for (const r of ranked) {
    r.account = (accountRank.get(r.c.accountId) ?? q.accountInFlight?.[r.c.accountId] ?? 0) + 1;
    accountRank.set(r.c.accountId, r.account);
  }
  return ranked
    .filter((r) => q.perAccount === undefined || r.account <= q.perAccount)
    .sort((a, b) => a.account - b.account || a.endpoint - b.endpoint || byAge(a.c, b.c))
    .slice(0, q.limit)
    .map((r) => r.c);
}

type EndpointAuthority = Pick<EndpointRecord, 'accountId' | 'ordersManage' | 'grantedScopes'>;

/**
 * Whether an endpoint may receive an event now: its account's live keys (`live`) and the key that set it up
 * (`grantedScopes`) both hold the event's read scope. pet.*: pets:read or events:read; the account's own
 * order.*: orders:read; another account's order.*: orders:manage, and only for an endpoint made with it;
 * the account's own application.* and applicant.*: applications:read; another account's: applications:manage.
 * Types this release does not know reach nobody.
 */
export function endpointMay(
  endpoint: EndpointAuthority,
  event: { type: string; accountId: number | null },
  live: ReadonlySet<Scope>,
): boolean {
  const granted = endpoint.grantedScopes;
  const may = (scope: Scope): boolean => live.has(scope) && (granted === null || granted.includes(scope));
  if (event.type.startsWith('pet.')) return may('pets:read') || may('events:read');
  // The account's own applications while it may read them; every account's with applications:manage.
  if (event.type.startsWith('application.') || event.type.startsWith('applicant.')) {
    return event.accountId === endpoint.accountId ? may('applications:read') : may('applications:manage');
  }
  if (!event.type.startsWith('order.')) return false;
  if (event.accountId === endpoint.accountId) return may('orders:read');
  return endpoint.ordersManage && may('orders:manage');
}

/** Subscribed to the event's type and allowed to receive it (endpointMay). */
export function endpointWants(
  endpoint: EndpointAuthority & { events: string[] },
  event: { type: string; accountId: number | null },
  live: ReadonlySet<Scope>,
): boolean {
  if (!endpoint.events.includes('*') && !endpoint.events.includes(event.type)) return false;
  return endpointMay(endpoint, event, live);
}

/** Which order events an endpoint receives now: every account's, or its own account's. */
export function orderScope(endpoint: EndpointAuthority, live: ReadonlySet<Scope>): 'all' | 'own' {
  const granted = endpoint.grantedScopes;
  return endpoint.ordersManage &&
    live.has('orders:manage') &&
    (granted === null || granted.includes('orders:manage'))
    ? 'all'
    : 'own';
}

/**
 * The scopes an endpoint with these events needs, each as the scopes that grant it: pet.*: events:read or
 * pets:read; application.* and applicant.*: applications:read; order.*: orders:read, and orders:manage for
 * an endpoint receiving every account's orders.
 */
export function neededScopes(
  events: readonly string[],
  ordersManage: boolean,
  all: readonly string[],
): Scope[][] {
  const types: readonly string[] = events.includes('*') ? all : events;
  const needed: Scope[][] = [];
  if (types.some((t) => t.startsWith('pet.'))) needed.push(['events:read', 'pets:read']);
  if (types.some((t) => t.startsWith('application.') || t.startsWith('applicant.'))) {
    needed.push(['applications:read']);
  }
  if (types.some((t) => t.startsWith('order.'))) {
    needed.push(['orders:read']);
    if (ordersManage) needed.push(['orders:manage']);
  }
  return needed;
}
