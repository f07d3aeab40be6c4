/**
 * JSON Merge Patch bodies (RFC 7396, `application/merge-patch+json`). The media type is parsed exactly like
 * `application/json` (Fastify's own parser: same body limit, same prototype-poisoning refusal), but only
 * routes that declare it in their body's `content` map accept it; anywhere else it stays a 415.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TSchema } from 'typebox';
import { ApiError } from './errors.js';

export const MERGE_PATCH = 'application/merge-patch+json';
const JSON_TYPE = 'application/json';

function declares(request: FastifyRequest, mediaType: string): boolean {
  const body = request.routeOptions.schema?.body as { content?: Record<string, unknown> } | undefined;
  return body?.content?.[mediaType] !== undefined;
}

export function registerMergePatch(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser(MERGE_PATCH, { parseAs: 'string' }, (request, body, done) => {
    if (!declares(request, MERGE_PATCH)) {
      done(new ApiError('unsupported_media_type'), undefined);
      return;
    }
    parseJson(request, body as string, done);
  });
}

/** A route's body schema accepting `application/json` and `application/merge-patch+json` alike. */
export function mergePatchBody<T extends TSchema>(schema: T): { content: Record<string, { schema: T }> } {
  return { content: { [JSON_TYPE]: { schema }, [MERGE_PATCH]: { schema } } };
}

/**
 * preValidation for a route with a `content` map: Fastify validates a body only against the schema of its
 * own media type and skips validation for any other, so a body must have come in one of the declared types.
 * A missing body is a validation error naming it.
 */
export function requireDeclaredBody(request: FastifyRequest): void {
  if (request.body === undefined || request.body === null) {
    throw new ApiError('validation_failed', {
      message: 'Invalid request: body is required.',
      details: [{ field: 'body', message: 'is required' }],
    });
  }
  if (!request.mediaType || !declares(request, request.mediaType)) {
    throw new ApiError('unsupported_media_type');
  }
}
