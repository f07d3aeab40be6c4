/**
 * The one error handler: whatever goes wrong, the client gets the Error shape with `application/json`.
 * Framework errors (bad JSON, wrong media type, oversized body, schema violations) are translated into
 * catalogue codes here; unexpected errors become a 500 that leaks nothing.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { StorageUnavailableError } from '../db/database.js';
import { invalidCursor } from './cursors.js';
import {
  ApiError,
  errorBody,
  MAX_DETAILS,
  MAX_FIELD_LENGTH,
  type ErrorCode,
  type ErrorDetail,
} from './errors.js';

interface AjvError {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
}

const PART_LABEL: Record<string, string> = {
  querystring: 'query',
  params: 'path',
  headers: 'header',
  body: 'body',
};

function fieldOf(error: AjvError, context: string): string {
  const path = error.instancePath.replace(/^\//, '').replaceAll('/', '.');
  const missing = error.params.missingProperty ?? error.params.additionalProperty;
  const field = typeof missing === 'string' ? (path ? `${path}.${missing}` : missing) : path;
  if (context === 'headers' && field === 'idempotency-key') return 'Idempotency-Key';
  const name = field || PART_LABEL[context] || context;
  return name.length > MAX_FIELD_LENGTH ? `${name.slice(0, MAX_FIELD_LENGTH - 1)}…` : name;
}

function messageOf(error: AjvError): string {
  switch (error.keyword) {
    case 'additionalProperties':
      return 'unknown field';
    case 'required':
      return 'is required';
    case 'pattern':
      return error.instancePath === '/name'
        ? 'must not be blank or contain control characters'
        : 'has characters that are not allowed';
    case 'enum': {
      // A detail's message holds at most 200 characters (ErrorDetail): a long list is named, not quoted.
      const allowed = error.params.allowedValues as unknown[];
      const listed = `must be one of: ${allowed.join(', ')}`;
      return listed.length <= 200
        ? listed
        : `must be one of the ${allowed.length} values the API document lists`;
    }
    default:
      return error.message ?? 'is invalid';
  }
}

export function validationDetails(validation: AjvError[], context: string): ErrorDetail[] {
  const seen = new Set<string>();
  const details: ErrorDetail[] = [];
  for (const error of validation) {
    const detail = { field: fieldOf(error, context), message: messageOf(error) };
    const key = `${detail.field}\u0000${detail.message}`;
    if (!seen.has(key)) {
      seen.add(key);
      details.push(detail);
    }
  }
  return details;
}

const FRAMEWORK_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid_json',
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid_json',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'bad_request',
  FST_ERR_BAD_URL: 'bad_request',
  FST_ERR_ASYNC_CONSTRAINT: 'bad_request',
};

const BY_STATUS: Record<number, ErrorCode> = {
  400: 'bad_request',
  401: 'invalid_api_key',
  404: 'not_found',
  405: 'method_not_allowed',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
};

/** Turn anything thrown into an ApiError; `undefined` means a fault of ours. */
export function toApiError(error: FastifyError | Error): ApiError | undefined {
  if (error instanceof ApiError) return error;
  if (error instanceof StorageUnavailableError) {
    return new ApiError('service_unavailable', { headers: { 'retry-after': '5' } });
  }
  const fe = error as FastifyError & { validation?: AjvError[]; validationContext?: string };
  if (fe.validation) {
    const details = validationDetails(fe.validation, fe.validationContext ?? 'body').slice(0, MAX_DETAILS);
    // A cursor the schema refuses (longer than any issued, given twice) is as unusable as an altered one.
    if (fe.validationContext === 'querystring' && details.every((d) => d.field === 'cursor')) {
      return invalidCursor();
    }
    return new ApiError('validation_failed', {
      message: `Invalid request: ${details.map((d) => `${d.field} ${d.message}`).join('; ')}.`,
      details: details,
    });
  }
  const mapped = fe.code ? FRAMEWORK_CODES[fe.code] : undefined;
  if (mapped) return new ApiError(mapped);
  if (error instanceof SyntaxError && /forbidden (prototype|constructor) property/.test(error.message)) {
    // Valid JSON, but a key that could pollute prototypes: an unknown field like any other.
    const field = error.message.includes('constructor') ? 'constructor' : '__proto__';
    return new ApiError('validation_failed', {
      message: `Invalid request: ${field} unknown field.`,
      details: [{ field, message: 'unknown field' }],
    });
  }
  if (error instanceof SyntaxError || fe.code === 'FST_ERR_CTP_INVALID_JSON')
    return new ApiError('invalid_json');
  const status = fe.statusCode;
  if (status !== undefined && status >= 400 && status < 500)
    return new ApiError(BY_STATUS[status] ?? 'bad_request');
  return undefined;
}

export function sendError(reply: FastifyReply, error: ApiError): FastifyReply {
  reply.errorCode = error.code;
  // An error describes no representation: validators a route set before failing would make a cache (or a
  // later If-None-Match) treat this answer as the resource. A 412 names the current ETag in its own headers.
  reply.removeHeader('etag').removeHeader('last-modified');
  if (error.headers) reply.headers(error.headers);
  return reply.code(error.status).type('application/json; charset=utf-8').send(errorBody(error));
}

/**
 * @param methodNotAllowed consulted before answering 404: a path that exists with other methods is a 405.
 */
export function registerErrorHandling(
  app: FastifyInstance,
  methodNotAllowed: (request: FastifyRequest) => ApiError | undefined = () => undefined,
): void {
  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const apiError = toApiError(error);
    if (apiError) {
      if (apiError.status >= 500) request.log.warn({ err: error }, 'request failed: %s', apiError.code);
      return sendError(reply, apiError);
    }
    request.log.error({ err: error }, 'unhandled error');
    return sendError(reply, new ApiError('internal_error'));
  });

  app.setNotFoundHandler((request, reply) =>
    sendError(reply, methodNotAllowed(request) ?? new ApiError('not_found')),
  );
}
