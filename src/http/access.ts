/**
 * Authentication and rate limiting for everything under /v1, in one onRequest hook so that every /v1
 * response, errors included, carries the rate-limit headers.
 *
 * Order: identify the caller by key; count the request against the account (valid key) or the client
 * address (no valid key, so key guessing is slow); reject over-limit requests; only then reject bad keys.
 * The public documents (OpenAPI, docs), unknown routes and wrong methods are counted too but answer
 * whatever the key.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Clock } from '../clock.js';
import type { Database } from '../db/database.js';
import { hashApiKey, isWellFormedApiKey } from '../modules/accounts/keys.js';
import {
  accountRepository,
  type AccountRepository,
  type KeyPrincipal,
} from '../modules/accounts/repository.js';
import { rateLimitHeaders, type RateLimiter } from '../ratelimit/limiter.js';
import { ApiError, type ErrorCode } from './errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated key and its account; set on every protected route. */
    principal: KeyPrincipal | null;
  }
  interface FastifyContextConfig {
    /** A public document: counted, but served without a key. */
    public?: boolean;
    /** Counted, but answers whatever the key (405 handlers). */
    anyCaller?: boolean;
  }
}

/** Counts a request against its client address bucket, sets the headers; resolves false when over limit. */
export type AddressCounter = (request: FastifyRequest, reply: FastifyReply) => Promise<boolean>;

export function addressCounter(limiter: RateLimiter, perMinute: number, clock: Clock): AddressCounter {
  return async (request, reply) => {
    const now = clock();
    const decision = await limiter.check(`ip:${request.ip}`, { perMinute }, now);
    reply.headers(rateLimitHeaders(decision, now));
    return decision.allowed;
  };
}

export interface AccessOptions {
  database: Database;
  limiter: RateLimiter;
  clock: Clock;
  countByAddress: AddressCounter;
}

const BEARER = /^bearer[ \t]+(\S+)[ \t]*$/i;

type Identification = { principal: KeyPrincipal } | { failure: ErrorCode };

async function identify(
  header: string | undefined,
  accounts: AccountRepository,
  now: number,
): Promise<Identification> {
  if (header === undefined || header.trim() === '') return { failure: 'missing_api_key' };
  const match = BEARER.exec(header);
  const key = match?.[1];
  if (!key || !isWellFormedApiKey(key)) return { failure: 'malformed_api_key' };
  const principal = await accounts.findKeyByHash(hashApiKey(key));
  if (!principal) return { failure: 'invalid_api_key' };
  if (principal.revokedAt !== null) return { failure: 'revoked_api_key' };
  if (principal.expiresAt !== null && principal.expiresAt <= now) return { failure: 'expired_api_key' };
  return { principal };
}

function isUnderV1(url: string): boolean {
  return url.startsWith('/v1/') || url === '/v1' || url.startsWith('/v1?');
}

/** Routes that answer whatever the key: public documents, unknown routes, wrong methods. */
function isOpenToAnyCaller(request: FastifyRequest): boolean {
  const config = request.routeOptions.config;
  return (
    request.is404 ||
    config.public === true ||
    config.anyCaller === true ||
    request.routeOptions.url?.startsWith('/v1/docs') === true
  );
}

export function registerAccess(app: FastifyInstance, options: AccessOptions): void {
  const { limiter, clock, countByAddress } = options;
  const accounts = options.database.repository(accountRepository);
  app.decorateRequest('principal', null);

  app.addHook('onRequest', async (request, reply) => {
    if (!isUnderV1(request.url)) return;
    const now = clock();
    let identity: Identification;
    try {
      identity = await identify(request.headers.authorization, accounts, now);
    } catch (error) {
      // The key could not be checked (database down): count the caller by address so even this 503
      // carries rate-limit headers, then let the error handler answer.
      await countByAddress(request, reply);
      throw error;
    }
    if ('principal' in identity) {
      const { account } = identity.principal;
      const decision = await limiter.check(
        `a:${account.id}`,
        { perMinute: account.perMinute, perDay: account.perDay },
        now,
        account.banLiftedAt,
      );
      reply.headers(rateLimitHeaders(decision, now));
      if (!decision.allowed) throw new ApiError(decision.reason ?? 'rate_limited');
      request.principal = identity.principal;
      return;
    }
    if (!(await countByAddress(request, reply))) throw new ApiError('rate_limited');
    if (isOpenToAnyCaller(request)) return;
    const error = identity.failure === 'missing_api_key' ? '' : `, error="invalid_token"`;
    throw new ApiError(identity.failure, undefined, undefined, {
      'www-authenticate': `Bearer realm="pet-adoption"${error}`,
    });
  });
}
