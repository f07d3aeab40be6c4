/** The Error schema and the documented error responses every route's schema declares. */
import { Type } from 'typebox';
import { ref } from './schemas.js';

export const ErrorDetail = Type.Object({
  field: Type.String({ description: 'The offending field, query parameter or header.' }),
  message: Type.String(),
});

export const ErrorSchema = Type.Object(
  {
    code: Type.String({
      description: 'Machine-readable error code from the documented catalogue (snake_case).',
    }),
    message: Type.String({ description: 'Human-readable description.' }),
    status: Type.Integer({ description: 'The HTTP status code of the response.' }),
    details: Type.Optional(Type.Array(ErrorDetail, { description: 'Present on some 400 responses.' })),
  },
  { $id: 'Error', description: 'Error' },
);

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

type ErrorResponse = ReturnType<typeof ref<typeof ErrorSchema>> & { description: string };

/** An Error-shaped response (a `$ref` to the Error component) for each status, for route schemas. */
export function errorResponses(...statuses: number[]): Record<number, ErrorResponse> {
  const out: Record<number, ErrorResponse> = {};
  for (const status of statuses) out[status] = { ...ref(ErrorSchema), description: errorDescription(status) };
  return out;
}

/** A `304 Not Modified` response: no body, the current `ETag`. */
export function notModifiedResponse(description: string): {
  description: string;
  type: 'null';
  headers: { ETag: { type: 'string'; description: string } };
} {
  return { description, type: 'null', headers: { ETag: header('The current entity tag.') } };
}

export function header(description: string): { type: 'string'; description: string } {
  return { type: 'string', description };
}
