/**
 * Row shapes and their mapping to records, the same on both backends (the SQL of each aliases its columns to
 * these names), shared by repository.sqlite.ts and repository.postgres.ts.
 */
import { randomBytes } from 'node:crypto';
import { formatScopes, parseScopes, type Scope } from '../accounts/index.js';
import type { ClaimedDelivery, EndpointRecord } from './repository.js';
export const ENDPOINT_COLUMNS = `id, account_id AS "accountId", url, events, secret,
  previous_secret AS "previousSecret", previous_expires_at AS "previousExpiresAt", enabled,
  disabled_reason AS "disabledReason", orders_manage AS "ordersManage", granted_scopes AS "grantedScopes",
  created_at AS "createdAt", updated_at AS "updatedAt"`;
export const DELIVERY_COLUMNS = `id, endpoint_id AS "endpointId", event_id AS "eventId",
  event_type AS "eventType", status, attempts, next_attempt_at AS "nextAttemptAt",
  last_status_code AS "lastStatusCode", last_error AS "lastError", last_attempt_at AS "lastAttemptAt",
  created_at AS "createdAt"`;

export type EndpointRow = Omit<EndpointRecord, 'events' | 'enabled' | 'ordersManage' | 'grantedScopes'> & {
  events: string;
  enabled: number;
  ordersManage: number;
  grantedScopes: string | null;
};

export function toEndpoint(row: EndpointRow): EndpointRecord {
  return {
    ...row,
    events: parseEvents(row.events),
    enabled: row.enabled === 1,
    ordersManage: row.ordersManage === 1,
    grantedScopes: row.grantedScopes === null ? null : (parseScopes(row.grantedScopes) ?? []),
  };
}

/** Storage form of an endpoint's granted scopes (null: not recorded). */
export const formatGranted = (scopes: readonly Scope[] | undefined): string | null =>
  scopes === undefined ? null : (formatScopes([...scopes].sort()) ?? '');

/** A delivery with what deciding whether its endpoint may still receive it needs. */
export interface AuthorityRow {
  id: number;
  type: string;
  eventAccountId: number | null;
  accountId: number;
  ordersManage: number;
  grantedScopes: string | null;
}

export const authorityOf = (row: AuthorityRow) => ({
  accountId: row.accountId,
  ordersManage: row.ordersManage === 1,
  grantedScopes: row.grantedScopes === null ? null : (parseScopes(row.grantedScopes) ?? []),
});

/** An event's fan-out cut short by the row bound: continue it after this endpoint id. */
export interface FanOutCursor {
  eventId: string;
  afterEndpoint: number;
}

/** Whether the error is the unique index on (account, url) of webhook endpoints. */
export function isDuplicateUrl(error: unknown): boolean {
  const e = (error ?? {}) as { code?: unknown; constraint?: unknown; message?: unknown };
  if (e.code === '23505') return e.constraint === 'webhook_endpoints_account_url';
  return (
    e.code === 'SQLITE_CONSTRAINT_UNIQUE' &&
    typeof e.message === 'string' &&
    e.message.includes('webhook_endpoints.url')
  );
}

export interface ClaimRow {
  id: number;
  endpointId: number;
  accountId: number;
  url: string;
  secret: string;
  previousSecret: string | null;
  previousExpiresAt: number | null;
  eventId: string;
  payload: string;
  attempts: number;
  traceparent: string | null;
}

export function toClaimed(row: ClaimRow, leaseToken: string, now: number): ClaimedDelivery {
  const secrets = [row.secret];
  if (row.previousSecret !== null && (row.previousExpiresAt ?? 0) > now) secrets.push(row.previousSecret);
  return {
    id: row.id,
    leaseToken,
    endpointId: row.endpointId,
    accountId: row.accountId,
    url: row.url,
    secrets,
    eventId: row.eventId,
    payload: row.payload,
    attempts: row.attempts,
    traceparent: row.traceparent,
  };
}

export const newLeaseToken = (): string => randomBytes(12).toString('base64url');

/** Storage form of an endpoint's event list: space-separated (types contain no spaces). */
export const formatEvents = (events: string[]): string => [...new Set(events)].join(' ');

export const parseEvents = (stored: string): string[] => stored.split(' ').filter((s) => s !== '');
