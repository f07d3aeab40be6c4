/**
 * Conditional requests (RFC 9110 §13): ETags, `If-None-Match` and `If-Match`. Written once for every module:
 * a route that returns a representation calls `notModified` to answer `304` when the client's copy is
 * current; a write route passes `ifMatch(request)` to its repository and answers a stale one with
 * `preconditionFailed`.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from './errors.js';

/** A strong ETag for a version number (`"<n>"`). */
export function strongEtag(version: number): string {
  return `"${version}"`;
}

/**
 * True when an `If-None-Match` value (a list, or `*`) matches `etag` by the weak comparison. `etag` is the
 * current representation's, undefined when the resource has none (not found, deleted): then nothing
 * matches, `*` included (RFC 9110 §13.1.2), and the request goes on to its 404 rather than a 304.
 */
export function ifNoneMatchHits(header: string | undefined, etag: string | undefined): boolean {
  if (header === undefined || etag === undefined) return false;
  const opaque = (tag: string): string => tag.trim().replace(/^W\//, '');
  if (header.trim() === '*') return true;
  return header.split(',').some((tag) => opaque(tag) === opaque(etag));
}

/**
 * Sets `ETag` on the reply; when the request's `If-None-Match` matches, answers `304` with no body and
 * returns true (the route then returns the reply instead of a body).
 */
export function notModified(request: FastifyRequest, reply: FastifyReply, etag: string): boolean {
  reply.header('etag', etag);
  if (!ifNoneMatchHits(request.headers['if-none-match'], etag)) return false;
  reply.code(304).send();
  return true;
}

/**
 * The `If-Match` precondition of a request (RFC 9110 §13.1.1): undefined when absent, otherwise a test of
 * the current ETag by the strong comparison (`*` matches any current representation; weak tags never
 * match). Repositories run it inside the write's transaction, so the check and the write are one step.
 */
export function ifMatch(request: FastifyRequest): ((etag: string) => boolean) | undefined {
  const header = request.headers['if-match'];
  if (header === undefined) return undefined;
  if (header.trim() === '*') return () => true;
  const tags = header
    .split(',')
    .map((tag) => tag.trim())
    .filter((tag) => /^"[\x21\x23-\x7e]*"$/.test(tag));
  return (etag) => !etag.startsWith('W/') && tags.includes(etag);
}

/** The 412 for a stale `If-Match`, carrying the current ETag so the client can refetch or retry. */
export function preconditionFailed(currentEtag: string): ApiError {
  return new ApiError('precondition_failed', {
    message: `If-Match does not match the current version (ETag ${currentEtag}); fetch it again and retry.`,
    headers: { etag: currentEtag },
  });
}
