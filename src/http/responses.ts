/** The Error schema and the documented error responses every route's schema declares. */
import { Type } from 'typebox';
import { type Static, type TUnsafe } from 'typebox';
import { type ErrorCatalogue, MAX_DETAILS, MAX_FIELD_LENGTH, MAX_MESSAGE_LENGTH } from './errors.js';

export const ErrorDetail = Type.Object({
  field: Type.String({
    maxLength: MAX_FIELD_LENGTH,
    description: 'The offending field, query parameter or header.',
    example: 'name',
  }),
  message: Type.String({ maxLength: 200, example: 'is required' }),
});

/**
 * The Error component for the one catalogue (the HTTP layer's codes and the modules', handed in by the app):
 * the document's `Error.code` enum is generated from it, in its order.
 */
export function errorSchema(catalogue: ErrorCatalogue) {
  return Type.Object(
    {
      code: Type.Unsafe<string>({
        type: 'string',
        enum: Object.keys(catalogue),
        description:
          'Machine-readable error code from the catalogue (see the table in the description above).',
        example: 'validation_failed',
      }),
      message: Type.String({
        maxLength: MAX_MESSAGE_LENGTH,
        description: 'Human-readable description.',
        example: 'Invalid request: name is required.',
      }),
      status: Type.Integer({
        format: 'int32',
        minimum: 400,
        maximum: 599,
        description: 'The HTTP status code of the response.',
        example: 400,
      }),
      details: Type.Optional(
        Type.Array(ErrorDetail, {
          maxItems: MAX_DETAILS,
          description: `Present on some 400 responses: each offending field (the first ${MAX_DETAILS}).`,
        }),
      ),
    },
    {
      $id: 'Error',
      description: 'Every error answer has this shape.',
      example: {
        code: 'validation_failed',
        message: 'Invalid request: name is required.',
        status: 400,
        details: [{ field: 'name', message: 'is required' }],
      },
    },
  );
}

/** A `$ref` to the Error component, which the app registers once (`errorSchema`). */
const ErrorRef: TUnsafe<Static<ReturnType<typeof errorSchema>>> = Type.Unsafe({ $ref: 'Error#' });

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid parameters or body (`validation_failed`, `invalid_json`, `bad_request`).',
  401: 'Missing, malformed, unknown, revoked or expired API key. Carries `WWW-Authenticate: Bearer`.',
  403: 'The key lacks a scope this operation needs (`insufficient_scope`). `WWW-Authenticate` names it.',
  404: 'Not found.',
  409:
    'A conflict: a request with the same Idempotency-Key is still in progress (`idempotency_in_progress`), or the ' +
    "resource's state forbids the change (e.g. `pet_has_open_order`).",
  410: 'The operation is past its sunset date (`gone`).',
  412: '`If-Match` does not match the current version (`precondition_failed`); the current `ETag` is sent.',
  413: 'Body larger than 16 KiB.',
  415: 'Body is not application/json.',
  422: 'Idempotency-Key reused with a different body.',
  500: 'A fault of ours (`internal_error`); nothing internal is revealed.',
  429: 'Rate limit exceeded (`rate_limited`) or temporarily banned (`temporarily_banned`). Carries `Retry-After`.',
  503:
    'A backing store is unavailable (`service_unavailable`), or the instance is overloaded and did nothing ' +
    '(`overloaded`). Carries `Retry-After`.',
};

export function errorDescription(status: number): string {
  return ERROR_DESCRIPTIONS[status] ?? 'Error.';
}

type ErrorResponse = typeof ErrorRef & { description: string };

/** An Error-shaped response (a `$ref` to the Error component) for each status, for route schemas. */
export function errorResponses(...statuses: number[]): Record<number, ErrorResponse> {
  const out: Record<number, ErrorResponse> = {};
  for (const status of statuses) out[status] = { ...ErrorRef, description: errorDescription(status) };
  return out;
}

/** A `304 Not Modified` response: no body, the current `ETag`. */
export function notModifiedResponse(description: string): {
  description: string;
  type: 'null';
  headers: { ETag: HeaderSchema };
} {
  return { description, type: 'null', headers: { ETag: etagHeader('The current entity tag.') } };
}

interface HeaderSchema {
  type: 'string';
  maxLength: number;
  pattern?: string;
  description: string;
}

/** Said in operations' descriptions: the access hook sets the rate-limit headers on every answer. */
export const rateLimitNote = 'Every response carries the rate-limit headers (see components.headers).';

/** A documented response header; bounded like every documented string (a Link with PUBLIC_URL is the longest). */
export function header(description: string, pattern?: string): HeaderSchema {
  return { type: 'string', maxLength: 2048, ...(pattern === undefined ? {} : { pattern }), description };
}

/** `"<n>"` or `W/"…"`. */
export const etagHeader = (description: string) => header(description, '^(W/)?"[^"]*"$');
/** A path under /v1, absolute when the deployment sets PUBLIC_URL. */
export const locationHeader = (description: string) =>
  header(
    `${description} Absolute (\`https://…/v1/…\`) when the deployment sets PUBLIC_URL.`,
    '^(https?://[^/]+[^?#]*)?/v1/',
  );
/** One or more `<target>; rel="…"` links; targets absolute when the deployment sets PUBLIC_URL. */
export const linkHeader = (description: string) =>
  header(`${description} The target is absolute when the deployment sets PUBLIC_URL.`, '^<[^>]+>;');
export const replayedHeader = (description: string) => header(description, '^true$');
