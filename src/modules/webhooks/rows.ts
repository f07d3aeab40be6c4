/**
 * Row shapes and their mapping to records, the same on both backends (the SQL of each aliases its columns to
 * these names), shared by repository.sqlite.ts and repository.postgres.ts.
 */
import { randomBytes } from 'node:crypto';
import { parseEvents, type ClaimedDelivery, type EndpointRecord } from './repository.js';

export const ENDPOINT_COLUMNS = `id, account_id AS "accountId", url, events, secret,
  previous_secret AS "previousSecret", previous_expires_at AS "previousExpiresAt", enabled,
  disabled_reason AS "disabledReason", orders_manage AS "ordersManage", created_at AS "createdAt",
  updated_at AS "updatedAt"`;
export const DELIVERY_COLUMNS = `id, endpoint_id AS "endpointId", event_id AS "eventId",
  event_type AS "eventType", status, attempts, next_attempt_at AS "nextAttemptAt",
  last_status_code AS "lastStatusCode", last_error AS "lastError", last_attempt_at AS "lastAttemptAt",
  created_at AS "createdAt"`;

export type EndpointRow = Omit<EndpointRecord, 'events' | 'enabled' | 'ordersManage'> & {
  events: string;
  enabled: number;
  ordersManage: number;
};

export function toEndpoint(row: EndpointRow): EndpointRecord {
  return {
    ...row,
    events: parseEvents(row.events),
    enabled: row.enabled === 1,
    ordersManage: row.ordersManage === 1,
  };
}

export interface ClaimRow {
  id: number;
  endpointId: number;
  url: string;
  secret: string;
  previousSecret: string | null;
  previousExpiresAt: number | null;
  eventId: string;
  payload: string;
  attempts: number;
}

export function toClaimed(row: ClaimRow, leaseToken: string, now: number): ClaimedDelivery {
  const secrets = [row.secret];
  if (row.previousSecret !== null && (row.previousExpiresAt ?? 0) > now) secrets.push(row.previousSecret);
  return {
    id: row.id,
    leaseToken,
    endpointId: row.endpointId,
    url: row.url,
    secrets,
    eventId: row.eventId,
    payload: row.payload,
    attempts: row.attempts,
  };
}

export const newLeaseToken = (): string => randomBytes(12).toString('base64url');
