import { ErrorSchema } from '../schemas.js';

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid parameters or body (`validation_failed`, `invalid_json`, `bad_request`).',
  401: 'Missing, malformed, unknown, revoked or expired API key. Carries `WWW-Authenticate: Bearer`.',
  404: 'Not found.',
  409: 'A request with the same Idempotency-Key is still in progress.',
  410: 'The operation is past its sunset date (`gone`).',
  413: 'Body larger than 16 KiB.',
  415: 'Body is not application/json.',
  422: 'Idempotency-Key reused with a different body.',
  500: 'A fault of ours (`internal_error`); nothing internal is revealed.',
  429: 'Rate limit exceeded (`rate_limited`) or temporarily banned (`temporarily_banned`). Carries `Retry-After`.',
  503: 'A backing store is unavailable. Carries `Retry-After`.',
};

/** An Error-shaped response for each status, with its description, for route schemas. */
export function errorResponses(
  ...statuses: number[]
): Record<number, typeof ErrorSchema & { description: string }> {
  const out: Record<number, typeof ErrorSchema & { description: string }> = {};
  for (const status of statuses) {
    out[status] = { ...ErrorSchema, description: ERROR_DESCRIPTIONS[status] ?? 'Error.' };
  }
  return out;
}

export function header(description: string): { type: 'string'; description: string } {
  return { type: 'string', description };
}
