import type { ErrorCode } from './generated/error-codes.js';
import type { RateLimitState } from './rate-limit.js';

export interface ErrorDetail {
  field: string;
  message: string;
}

export interface PetAdoptionErrorInit {
  code: ErrorCode;
  message: string;
  status: number;
  requestId?: string | undefined;
  rateLimit?: RateLimitState | undefined;
  details?: ErrorDetail[] | undefined;
  /** The answer's headers (ETag on a 412, Allow on a 405, WWW-Authenticate on a 401/403…). */
  headers?: Headers | undefined;
}

/**
 * An error answer of the service (the Error shape): `code` is one of the catalogue's codes, `status` the
 * HTTP status, `requestId` the `X-Request-Id` to quote when asking about it, `rateLimit` the quota state the
 * answer reported.
 */
export class PetAdoptionError extends Error {
  override readonly name: string = 'PetAdoptionError';
  readonly code: ErrorCode;
  readonly status: number;
  readonly requestId: string | undefined;
  readonly rateLimit: RateLimitState | undefined;
  readonly details: ErrorDetail[] | undefined;
  readonly headers: Headers | undefined;

  constructor(init: PetAdoptionErrorInit) {
    super(init.message);
    this.code = init.code;
    this.status = init.status;
    this.requestId = init.requestId;
    this.rateLimit = init.rateLimit;
    this.details = init.details;
    this.headers = init.headers;
  }
}

/**
 * A `429` the client did not (or no longer would) wait out: the wait is longer than `maxRetryAfterMs`
 * (the day window, a ban) or the retries are spent. `retryAfterMs` says when trying again can succeed.
 */
export class RateLimitError extends PetAdoptionError {
  override readonly name: string = 'RateLimitError';
  readonly retryAfterMs: number;

  constructor(init: PetAdoptionErrorInit & { retryAfterMs: number }) {
    super(init);
    this.retryAfterMs = init.retryAfterMs;
  }
}

/** The service could not be reached, or the connection broke before a whole answer arrived, on every try. */
export class PetAdoptionConnectionError extends Error {
  override readonly name: string = 'PetAdoptionConnectionError';
  constructor(message: string, options: { cause: unknown }) {
    super(message, options);
  }
}

/**
 * The catalogue code for an answer that is not in the Error shape (an HTML 502 from a proxy in front of the
 * service, say): the catalogue's general code for that status.
 */
export function codeForStatus(status: number): ErrorCode {
  const byStatus: Record<number, ErrorCode> = {
    400: 'bad_request',
    401: 'invalid_api_key',
    403: 'insufficient_scope',
    404: 'not_found',
    405: 'method_not_allowed',
    408: 'request_timeout',
    410: 'gone',
    412: 'precondition_failed',
    413: 'payload_too_large',
    415: 'unsupported_media_type',
    429: 'rate_limited',
    431: 'headers_too_large',
    500: 'internal_error',
  };
  return byStatus[status] ?? (status >= 500 ? 'service_unavailable' : 'bad_request');
}

/** The body as an Error shape, if it is one. A code this client does not know (a newer service) is kept. */
export function parseErrorBody(
  text: string,
): { code: ErrorCode; message: string; details?: ErrorDetail[] } | undefined {
  try {
    const body = JSON.parse(text) as unknown;
    if (typeof body !== 'object' || body === null) return undefined;
    const { code, message, details } = body as Record<string, unknown>;
    if (typeof code !== 'string' || typeof message !== 'string') return undefined;
    return {
      code: code as ErrorCode,
      message,
      ...(Array.isArray(details) ? { details: details as ErrorDetail[] } : {}),
    };
  } catch {
    return undefined;
  }
}
