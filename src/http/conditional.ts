/**
 * Conditional requests (RFC 9110 §13): ETags and `If-None-Match`. Written once for every module; a route
 * that returns a representation calls `notModified` to answer `304` when the client's copy is current.
 */
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** A strong ETag for a version number (`"<n>"`). */
export function strongEtag(version: number): string {
  return `"${version}"`;
}

/** A weak ETag for a body whose bytes identify its state (e.g. a list page). */
export function weakEtag(body: unknown): string {
  return `W/"${createHash('sha256').update(JSON.stringify(body)).digest('base64url').slice(0, 27)}"`;
}

/** True when an `If-None-Match` value (a list, or `*`) matches `etag` by the weak comparison. */
export function ifNoneMatchHits(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
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
 * True when an `If-Match` value (a list, or `*`) matches `etag` by the strong comparison (RFC 9110
 * §13.1.1): weak tags never match. A route evaluates it inside its write's transaction, against the
 * version it has locked, so the check and the write are one.
 */
export function ifMatchHits(header: string, etag: string): boolean {
  if (header.trim() === '*') return true;
  return header.split(',').some((tag) => !tag.trim().startsWith('W/') && tag.trim() === etag);
}
