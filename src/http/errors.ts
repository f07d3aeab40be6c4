/**
 * The error catalogue: every error code the API can answer with, its HTTP status and default message. The
 * HTTP layer's own codes are here; a module declares its own with `defineErrors` (its `errors`), and the one
 * catalogue the OpenAPI document, the Error schema's enum and docs/api.md's table list is both, merged by
 * `mergeErrorCatalogues` (src/modules/declared.ts hands the modules' catalogues in).
 */

/** One code's answer: its HTTP status and the message sent unless the thrower gives another. */
export interface ErrorEntry {
  status: number;
  message: string;
}
export type ErrorCatalogue = Readonly<Record<string, ErrorEntry>>;

/** The codes of the HTTP layer itself (authentication, limits, parsing, faults): any route may answer them. */
export const errorCatalogue = {
  validation_failed: { status: 400, message: 'The request has invalid or missing values.' },
  invalid_json: { status: 400, message: 'The request body is not valid JSON.' },
  bad_request: { status: 400, message: 'The request could not be understood.' },
  invalid_cursor: {
    status: 400,
    message:
      'The cursor is not valid for this query: follow the Link of the previous page (same parameters), or start again without a cursor.',
  },
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
  method_not_allowed: { status: 405, message: 'This method is not allowed on this resource.' },
  idempotency_in_progress: {
    status: 409,
    message: 'A request with this Idempotency-Key is still being processed; retry shortly.',
  },
  request_timeout: {
    status: 408,
    message: 'The request was not received in time. Send the headers and body without pausing.',
  },
  precondition_failed: {
    status: 412,
    message: 'If-Match does not match the current version; the current ETag is in the ETag header.',
  },
  payload_too_large: { status: 413, message: 'The request body is larger than 16 KiB.' },
  unsupported_media_type: { status: 415, message: 'The request body must be application/json.' },
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
} as const satisfies ErrorCatalogue;

/** A code of the HTTP layer's own; a module's codes are typed by its `defineErrors` catalogue. */
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
  /**
   * `options`: a message alone, or what else the answer carries. A module's codes come with their `entry`
   * from the module's catalogue (`defineErrors(...).error` passes it), so each code is checked against the
   * catalogue that declares it.
   */
  constructor(code: ErrorCode, options?: string | ApiErrorOptions);
  constructor(code: string, options: string | ApiErrorOptions | undefined, entry: ErrorEntry);
  constructor(
    readonly code: string,
    options?: string | ApiErrorOptions,
    entry: ErrorEntry = errorCatalogue[code as ErrorCode],
  ) {
    const { message, details, headers } =
      typeof options === 'string' ? { message: options } : (options ?? {});
    super(message ?? entry.message);
    this.details = details;
    this.headers = headers;
    this.name = 'ApiError';
    this.status = entry.status;
  }
}

/** A module's error codes, and the typed way to raise them. */
export interface ModuleErrors<C extends ErrorCatalogue> {
  readonly catalogue: C;
  /** An ApiError with one of these codes: its status, and its message unless `options` gives one. */
  error(code: keyof C & string, options?: string | ApiErrorOptions): ApiError;
}

/** Declares a module's codes (its `ApiModule.errors`); throw them with the returned `error`. */
export function defineErrors<const C extends ErrorCatalogue>(catalogue: C): ModuleErrors<C> {
  return {
    catalogue,
    error: (code, options) => new ApiError(code, options, catalogue[code]!),
  };
}

/**
 * The one catalogue: the HTTP layer's codes and every module's, ordered by status (the layer's first within a
 * status, then the modules' in module order). A code declared twice is a mistake, refused.
 */
export function mergeErrorCatalogues(catalogues: readonly ErrorCatalogue[]): ErrorCatalogue {
  const entries: [string, ErrorEntry][] = [];
  const seen = new Set<string>();
  for (const catalogue of [errorCatalogue, ...catalogues]) {
    for (const [code, entry] of Object.entries(catalogue)) {
      if (seen.has(code)) throw new Error(`the error code ${code} is declared twice`);
      seen.add(code);
      entries.push([code, entry]);
    }
  }
  // Array.prototype.sort is stable: equal statuses keep the order above.
  return Object.fromEntries(entries.sort(([, a], [, b]) => a.status - b.status));
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
