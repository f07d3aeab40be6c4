/**
 * Which PostgreSQL and `pg` errors mean "the database cannot serve this right now" (a 503), apart from the
 * connection handling in postgres.ts.
 */
import { StorageUnavailableError } from './database.js';

const NODE_UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ECONNABORTED',
]);

/**
 * SQLSTATEs meaning "the database cannot serve this right now": retrying later may succeed, so the API
 * answers 503 rather than 500. Authentication and missing-database errors are included because, seen from a
 * request, the database is just as unreachable (the cause keeps the detail for the logs).
 */
function isUnavailableSqlState(code: string): boolean {
  return (
    code.startsWith('08') || // connection exception
    code.startsWith('53') || // insufficient resources (too many connections, out of memory, disk full)
    code.startsWith('28') || // invalid authorization
    code === '57014' || // query_canceled: statement_timeout fired
    code === '57P01' || // admin_shutdown
    code === '57P02' || // crash_shutdown
    code === '57P03' || // cannot_connect_now (starting up, in recovery)
    code === '57P05' || // idle_session_timeout
    code === '55P03' || // lock_not_available
    code === '40001' || // serialization_failure
    code === '40P01' || // deadlock_detected
    code === '3D000' // invalid_catalog_name: database does not exist
  );
}

/** pg reports pool and socket trouble with plain messages, not codes. */
const UNAVAILABLE_MESSAGES = [
  'timeout exceeded when trying to connect', // pool: no free connection in time
  'timeout expired', // client: connect did not complete in time
  'connection terminated',
  'query read timeout',
  'connection timeout',
  'not queryable',
  'cannot use a pool after calling end',
];

export function isUnavailable(error: unknown, depth = 0): boolean {
  if (depth > 4 || typeof error !== 'object' || error === null) return false;
  const { code, message, errors, cause } = error as {
    code?: unknown;
    message?: unknown;
    errors?: unknown;
    cause?: unknown;
  };
  if (typeof code === 'string') {
    if (NODE_UNAVAILABLE_CODES.has(code)) return true;
    if (/^[0-9A-Z]{5}$/.test(code) && isUnavailableSqlState(code)) return true;
  }
  if (typeof message === 'string') {
    const lower = message.toLowerCase();
    if (UNAVAILABLE_MESSAGES.some((m) => lower.includes(m))) return true;
  }
  // Node's happy-eyeballs connect reports every attempted address in an AggregateError.
  if (Array.isArray(errors) && errors.some((e) => isUnavailable(e, depth + 1))) return true;
  return isUnavailable(cause, depth + 1);
}

export function translatePostgresError(error: unknown): unknown {
  return error instanceof StorageUnavailableError || !isUnavailable(error)
    ? error
    : new StorageUnavailableError(error);
}
