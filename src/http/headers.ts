/**
 * Response headers every answer needs whatever produced it (route, hook, error handler, 404, framework
 * error, the docs' static files): `X-Content-Type-Options`, `Cache-Control` and CORS. They are set in one
 * onSend hook, which runs for all of these, so no code path can forget them.
 *
 * CORS is written here rather than taken from @fastify/cors: that plugin always adds an `OPTIONS *` route,
 * which would turn every OPTIONS to an unknown path into a matched route (past the 404 answer and past an
 * access decision made by the matched route), and it answers a non-preflight OPTIONS from an allowed origin
 * with a text/plain 400 outside the Error shape. What remains is a set lookup and a few headers.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** Request headers a browser may send: the API's own, plus a caller's request id. */
const ALLOW_HEADERS = [
  'Authorization',
  'Content-Type',
  'Idempotency-Key',
  'If-Match',
  'If-None-Match',
  'X-Request-Id',
].join(', ');

/** Response headers a browser script may read (it sees only the CORS-safelisted ones otherwise). */
export const EXPOSE_HEADERS = [
  'Link',
  'Location',
  'ETag',
  'Retry-After',
  'X-Request-Id',
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'RateLimit',
  'RateLimit-Policy',
  'Deprecation',
  'Sunset',
  'Idempotent-Replayed',
].join(', ');

/** Seconds a browser may reuse a preflight answer; Chromium caps it at 7200. */
export const PREFLIGHT_MAX_AGE = 7200;

export interface HeadersOptions {
  /** Exact origins (`https://app.example.com`) allowed to call the API from a browser; empty: none. */
  corsOrigins: readonly string[];
  /** The `Allow` list of a matched route's path (`GET, HEAD, POST`), or undefined when it has none. */
  allowOf(request: FastifyRequest): string | undefined;
}

export interface ResponseHeaders {
  /** Sets the headers on one answer; for answers that bypass the hooks (Fastify's frameworkErrors). */
  apply(request: FastifyRequest, reply: FastifyReply): void;
  /** Adds the hooks: register before the access hook, so preflights need no key. */
  register(app: FastifyInstance): void;
}

/**
 * The API documents are the same for everyone and may be cached; everything else is live state (pets,
 * quotas, health) or an answer about one caller (401, 429), so it must not be stored anywhere. A request that
 * carried a key gets `no-store` even for a document: its rate-limit headers describe that account.
 */
function isCacheable(request: FastifyRequest, reply: FastifyReply): boolean {
  // Immutable assets set their own caching, keyed or not (the key plays no part in them).
  if (request.routeOptions.config?.access === 'asset')
    return reply.statusCode === 200 || reply.statusCode === 304;
  if (request.headers.authorization !== undefined || request.is404 || reply.statusCode >= 300) return false;
  if (request.method !== 'GET' && request.method !== 'HEAD') return false;
  // Decided by the matched route's declaration, like access: the documents are the routes declared public
  // (405 answers are public too, but errors, so never cached).
  return request.routeOptions.config?.access === 'public';
}

function addVaryOrigin(reply: FastifyReply): void {
  const vary = reply.getHeader('vary');
  if (vary === undefined) reply.header('vary', 'Origin');
  else if (!/(^|,)\s*(origin|\*)\s*(,|$)/i.test(String(vary)))
    reply.header('vary', `${String(vary)}, Origin`);
}

export function responseHeaders(options: HeadersOptions): ResponseHeaders {
  const origins = new Set(options.corsOrigins);
  const allowed = (request: FastifyRequest): string | undefined => {
    const origin = request.headers.origin;
    return origin !== undefined && origins.has(origin) ? origin : undefined;
  };

  function apply(request: FastifyRequest, reply: FastifyReply): void {
    reply.header('x-content-type-options', 'nosniff');
    if (!isCacheable(request, reply)) reply.header('cache-control', 'no-store');
    if (origins.size === 0) return;
    // Answers differ by Origin, so shared caches must key on it (the documents are cacheable).
    addVaryOrigin(reply);
    const origin = allowed(request);
    if (origin === undefined) return;
    reply.header('access-control-allow-origin', origin);
    reply.header('access-control-expose-headers', EXPOSE_HEADERS);
  }

  function register(app: FastifyInstance): void {
    if (origins.size > 0) {
      // A preflight carries no key (browsers strip Authorization), so it is answered here, before the access
      // hook: it needs no key, is not counted, and costs no lookup. Only paths the API serves get a 204; an
      // unknown path, an unlisted origin or a plain OPTIONS goes on to the usual 404/405 answer.
      // Callback style: this hook runs for every request.
      app.addHook('onRequest', (request, reply, done) => {
        if (request.method !== 'OPTIONS' || request.headers['access-control-request-method'] === undefined)
          return done();
        const allow = allowed(request) === undefined ? undefined : options.allowOf(request);
        if (allow === undefined) return done();
        reply
          .code(204)
          .headers({
            'access-control-allow-methods': allow,
            'access-control-allow-headers': ALLOW_HEADERS,
            'access-control-max-age': String(PREFLIGHT_MAX_AGE),
            'content-length': '0',
          })
          .send();
      });
    }
    app.addHook('onSend', (request, reply, payload, done) => {
      apply(request, reply);
      done(null, payload);
    });
  }

  return { apply, register };
}
