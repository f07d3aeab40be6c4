/**
 * Authentication and rate limiting for everything under /v1 (but the public OpenAPI document and docs),
 * in one onRequest hook so that every /v1 response, errors included, carries the rate-limit headers.
 *
 * Order: identify the caller by key; count the request against the account (valid key) or the client
 * address (no valid key, so key guessing is slow); reject over-limit requests; only then reject bad keys.
 * Unknown routes and wrong methods are counted too but answer 404/405 whatever the key.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Clock } from '../clock.js';
import { ApiError, type ErrorCode } from '../errors.js';
import { hashApiKey, isWellFormedApiKey } from '../keys.js';
import { rateLimitHeaders, type RateLimiter } from '../ratelimit/limiter.js';
import type { KeyPrincipal, Storage } from '../storage/storage.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated key and its account; set on every protected route. */
    principal: KeyPrincipal | null;
  }
  interface FastifyContextConfig {
    /** Served without authentication or rate limiting. */
    public?: boolean;
    /** Counted, but answers whatever the key (404 and 405 handlers). */
    anyCaller?: boolean;
  }
}

export interface AccessOptions {
  storage: Storage;
  limiter: RateLimiter;
  clock: Clock;
  unauthenticatedPerMinute: number;
}

const BEARER = /^bearer[ \t]+(\S+)[ \t]*$/i;

type Identification = { principal: KeyPrincipal } | { failure: ErrorCode };

async function identify(header: string | undefined, storage: Storage, now: number): Promise<Identification> {
  if (header === undefined || header.trim() === '') return { failure: 'missing_api_key' };
  const match = BEARER.exec(header);
  const key = match?.[1];
  if (!key || !isWellFormedApiKey(key)) return { failure: 'malformed_api_key' };
  const principal = await storage.findKeyByHash(hashApiKey(key));
  if (!principal) return { failure: 'invalid_api_key' };
  if (principal.revokedAt !== null) return { failure: 'revoked_api_key' };
  if (principal.expiresAt !== null && principal.expiresAt <= now) return { failure: 'expired_api_key' };
  return { principal };
}

function isPublic(request: FastifyRequest): boolean {
  const route = request.routeOptions.url;
  if (request.routeOptions.config.public || route?.startsWith('/v1/docs')) return true;
  const url = request.url;
  return !(url.startsWith('/v1/') || url === '/v1' || url.startsWith('/v1?'));
}

export function registerAccess(app: FastifyInstance, options: AccessOptions): void {
  const { storage, limiter, clock, unauthenticatedPerMinute } = options;
  app.decorateRequest('principal', null);

  app.addHook('onRequest', async (request, reply) => {
    if (isPublic(request)) return;
    const now = clock();
    const identity = await identify(request.headers.authorization, storage, now);
    const decision =
      'principal' in identity
        ? await limiter.check(
            `a:${identity.principal.account.id}`,
            { perMinute: identity.principal.account.perMinute, perDay: identity.principal.account.perDay },
            now,
            identity.principal.account.banLiftedAt,
          )
        : await limiter.check(`ip:${request.ip}`, { perMinute: unauthenticatedPerMinute }, now);
    reply.headers(rateLimitHeaders(decision, now));
    if (!decision.allowed) throw new ApiError(decision.reason ?? 'rate_limited');
    if ('principal' in identity) {
      request.principal = identity.principal;
      return;
    }
    if (request.is404 || request.routeOptions.config.anyCaller) return;
    const error = identity.failure === 'missing_api_key' ? '' : `, error="invalid_token"`;
    throw new ApiError(identity.failure, undefined, undefined, {
      'www-authenticate': `Bearer realm="pet-adoption"${error}`,
    });
  });
}
