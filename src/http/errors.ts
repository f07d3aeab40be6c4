/**
 * The error catalogue: every error code the API can answer with, its HTTP status and default message.
 * The README's error table and the OpenAPI document are generated from / checked against this list.
 */
export const errorCatalogue = {
  validation_failed: { status: 400, message: 'The request has invalid or missing values.' },
  invalid_json: { status: 400, message: 'The request body is not valid JSON.' },
  bad_request: { status: 400, message: 'The request could not be understood.' },
  missing_api_key: {
    status: 401,
    message: 'No API key was sent. Send it as "Authorization: Bearer <API_KEY>".',
  },
  malformed_api_key: {
    status: 401,
    message: 'The Authorization header is not "Bearer <API_KEY>" with a well-formed key.',
  },
  invalid_api_key: { status: 401, message: 'The API key is not known.' },
  revoked_api_key: { status: 401, message: 'The API key has been revoked.' },
  expired_api_key: { status: 401, message: 'The API key has expired.' },
  insufficient_scope: {
    status: 403,
    message: 'This API key lacks a scope this operation needs.',
  },
  not_found: { status: 404, message: 'No such resource.' },
  pet_not_found: { status: 404, message: 'No pet with this id.' },
  webhook_endpoint_not_found: { status: 404, message: 'No webhook endpoint with this id in this account.' },
  delivery_not_found: { status: 404, message: 'This webhook endpoint has no delivery with this id.' },
  order_not_found: { status: 404, message: 'No order with this id.' },
  photo_not_found: { status: 404, message: 'No photo with this id.' },
  method_not_allowed: { status: 405, message: 'This method is not allowed on this resource.' },
  idempotency_in_progress: {
    status: 409,
    message: 'A request with this Idempotency-Key is still being processed; retry shortly.',
  },
  pet_has_open_order: {
    status: 409,
    message:
      'The pet has an open order (placed or approved); its status cannot change and it cannot be deleted.',
  },
  invalid_transition: {
    status: 409,
    message: 'The order is not in a status this action applies to.',
  },
  pet_not_available: { status: 409, message: 'The pet is not available for adoption.' },
  photo_limit: { status: 409, message: 'The pet has the most photos it may (20); delete one first.' },
  open_order_limit: {
    status: 409,
    message: 'This account already holds the most open orders it may; cancel or complete one first.',
  },
  webhook_endpoint_limit: {
    status: 409,
    message: 'This account already holds the most webhook endpoints it may; delete one first.',
  },
  webhook_endpoint_exists: {
    status: 409,
    message: 'This account already has a webhook endpoint with this URL.',
  },
  request_timeout: {
    status: 408,
    message: 'The request was not received in time. Send the headers and body without pausing.',
  },
  gone: { status: 410, message: 'This operation has been removed. Use GET /v1/pets with the status filter.' },
  precondition_failed: {
    status: 412,
    message: 'If-Match does not match the current version; the current ETag is in the ETag header.',
  },
  payload_too_large: { status: 413, message: 'The request body is larger than 16 KiB.' },
  unsupported_media_type: { status: 415, message: 'The request body must be application/json.' },
  invalid_image: {
    status: 422,
    message:
      'The body is not a usable image of its Content-Type (it does not decode, is truncated, or is over 50 megapixels).',
  },
  idempotency_key_reused: {
    status: 422,
    message: 'This Idempotency-Key was already used with a different request body.',
  },
  rate_limited: {
    status: 429,
    message: 'Rate limit exceeded. Retry after the time in the Retry-After header.',
  },
  temporarily_banned: {
    status: 429,
    message:
      'This account is temporarily banned for ignoring rate limits. Retry after the time in Retry-After.',
  },
  too_many_invalid_keys: {
    status: 429,
    message:
      'Too many invalid API keys from this address: every request carrying a key is refused until the minute ends. Retry after the time in Retry-After.',
  },
  headers_too_large: { status: 431, message: 'The request headers are too large.' },
  internal_error: { status: 500, message: 'An internal error occurred.' },
  service_unavailable: {
    status: 503,
    message: 'The service is temporarily unavailable. Retry after the time in Retry-After.',
  },
  overloaded: {
    status: 503,
    message:
      'This instance has more requests than it can answer promptly; nothing was done. Retry after the time in Retry-After.',
  },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof errorCatalogue;

/**
 * Bounds of what an Error body carries. Field names can come from the request (an unknown body field), so
 * they, the list and the message built from it are cut to these lengths; the document states them.
 */
export const MAX_DETAILS = 20;
export const MAX_FIELD_LENGTH = 200;
export const MAX_MESSAGE_LENGTH = 8192;

export interface ErrorDetail {
  field: string;
  message: string;
}

/** An error meant for the client: rendered by the one error handler into the Error shape. */
export interface ApiErrorOptions {
  /** Replaces the catalogue's message for this code. */
  message?: string;
  details?: ErrorDetail[];
  /** Response headers the answer carries (e.g. `retry-after`, `www-authenticate`). */
  headers?: Record<string, string>;
}

export class ApiError extends Error {
  readonly status: number;
  readonly details?: ErrorDetail[];
  readonly headers?: Record<string, string>;
  /** `options`: a message alone, or what else the answer carries. */
  constructor(
    readonly code: ErrorCode,
    options?: string | ApiErrorOptions,
  ) {
    const { message, details, headers } =
      typeof options === 'string' ? { message: options } : (options ?? {});
    super(message ?? errorCatalogue[code].message);
    this.details = details;
    this.headers = headers;
    this.name = 'ApiError';
    this.status = errorCatalogue[code].status;
  }
}

export interface ErrorBody {
  code: string;
  message: string;
  status: number;
  details?: ErrorDetail[];
}

export function errorBody(error: ApiError): ErrorBody {
  const message =
    error.message.length > MAX_MESSAGE_LENGTH
      ? `${error.message.slice(0, MAX_MESSAGE_LENGTH - 1)}…`
      : error.message;
  const body: ErrorBody = { code: error.code, message, status: error.status };
  if (error.details && error.details.length > 0) body.details = error.details.slice(0, MAX_DETAILS);
  return body;
}
