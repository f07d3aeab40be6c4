/**
 * Who may call what, decided by the route that matched and what it declares, never by the URL's text: the
 * router normalises request targets (absolute-form, percent-encoding) in its own way, and any second reading
 * of the URL here would sooner or later disagree with it. Every route declares its access (`config.access`);
 * a route that declares nothing stops the app from starting (checked once every route exists).
 *
 * Order for every request that is not an operations probe: refuse an address locked out for guessing keys
 * (before any key lookup); identify the caller by key; count the request against the account (valid key) or
 * the client address (no valid key, so key guessing is slow); reject over-limit requests; only then reject
 * bad keys. Public documents, unknown routes and wrong methods are counted too, but answer whatever the key.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import type { Clock } from '../clock.js';
import { rateLimitHeaders, type RateLimiter } from '../ratelimit/limiter.js';
import type { AuthFailureLockout } from '../ratelimit/lockout.js';
import { ApiError, type ErrorCode } from './errors.js';
import type { ServiceMetrics } from './observability.js';

/**
 * A scope's name, as the modules declare them (the accounts module stores which ones a key has); any module
 * may declare new ones, so names are checked at run time (isScope in src/modules/scopes.ts).
 */
export type Scope = string;

/** What a valid key stands for; the accounts module finds it (`KeyLookup`), this layer only reads it. */
export interface Principal {
  keyId: string;
  expiresAt: number | null;
  revokedAt: number | null;
  /** What the key may do: its granted scopes with their implications. */
  scopes: ReadonlySet<Scope>;
  account: { id: number; name: string; perMinute: number; perDay: number; banLiftedAt: number | null };
}

/** How keys are recognised, supplied by whoever stores them (src/app.ts wires the accounts module in). */
export interface KeyLookup {
  /** Whether the text can be a key at all, checked without storage (a typo or junk never costs a lookup). */
  isWellFormed(key: string): boolean;
  /** The key's principal, or undefined when no key matches. */
  find(key: string): Promise<Principal | undefined>;
}

/**
 * What a route declares about its callers:
 * - `{ scopes }`: an API operation: a valid key is required and the request counts against its account;
 * - `'public'`: a document under /v1 (OpenAPI, docs) or a 405 answer: counted (by account or address) but
 *   served whatever the key;
 * - `'operations'`: a probe outside the API (/healthz, /readyz, /metrics): neither keyed nor counted, so a
 *   flood of API clients can never starve an orchestrator's probe.
 * - `'asset'`: immutable bytes at unguessable URLs (photos), served without a key and not counted (a page
 *   shows dozens at once), but, unlike a probe, still under overload protection.
 */
export type RouteAccess = { scopes: readonly Scope[] } | 'public' | 'operations' | 'asset';

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated key and its account; set on every route that declares scopes. */
    principal: Principal | null;
  }
  interface FastifyContextConfig {
    access?: RouteAccess;
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
  keys: KeyLookup;
  /** Every scope the modules declare: a route needing any other stops the app from starting. */
  scopes: ReadonlySet<Scope>;
  limiter: RateLimiter;
  clock: Clock;
  countByAddress: AddressCounter;
  lockout: AuthFailureLockout;
  metrics: ServiceMetrics;
}

const BEARER = /^bearer[ \t]+(\S+)[ \t]*$/i;

type Identification = { principal: Principal } | { failure: ErrorCode };

async function identify(header: string, keys: KeyLookup, now: number): Promise<Identification> {
  const match = BEARER.exec(header);
  const key = match?.[1];
  if (!key || !keys.isWellFormed(key)) return { failure: 'malformed_api_key' };
  const principal = await keys.find(key);
  if (!principal) return { failure: 'invalid_api_key' };
  if (principal.revokedAt !== null) return { failure: 'revoked_api_key' };
  if (principal.expiresAt !== null && principal.expiresAt <= now) return { failure: 'expired_api_key' };
  return { principal };
}

/** 403 insufficient_scope (RFC 6750 section 3.1) naming every scope the route needs that the key lacks. */
function requireScopes(granted: ReadonlySet<Scope>, needed: readonly Scope[]): void {
  const missing = needed.filter((scope) => !granted.has(scope));
  if (missing.length === 0) return;
  const list = missing.join(' ');
  throw new ApiError('insufficient_scope', {
    message: `This API key lacks the scope ${missing.map((s) => `"${s}"`).join(', ')} that this operation needs.`,
    headers: {
      'www-authenticate': `Bearer realm="pet-adoption", error="insufficient_scope", scope="${list}"`,
    },
  });
}

/** Whether the caller's key may use `scope` (e.g. `orders:manage` to see every account's orders). */
export function hasScope(request: FastifyRequest, scope: Scope): boolean {
  return request.principal?.scopes.has(scope) === true;
}

function describe(route: RouteOptions): string {
  return `${[route.method].flat().join(',')} ${route.url}`;
}

/**
 * Fails closed at start-up: collects every route as it is registered and, once all exist, refuses to start
 * when one declares no access. Checked at `onReady` rather than in `onRoute` so that a plugin wrapping
 * third-party routes (the docs page) can add their declaration in its own onRoute hook, which runs after ours.
 */
function requireDeclarations(app: FastifyInstance, scopes: ReadonlySet<Scope>): void {
  const routes: RouteOptions[] = [];
  app.addHook('onRoute', (route) => {
    routes.push(route);
  });
  app.addHook('onReady', async () => {
    const undeclared = routes.filter((route) => route.config?.access === undefined).map(describe);
    if (undeclared.length > 0) {
      throw new Error(
        `Routes declare no access (config.access), refusing to start: ${undeclared.join('; ')}`,
      );
    }
    const unknown = routes.flatMap((route) => {
      const access = route.config?.access;
      const names = typeof access === 'object' ? access.scopes.filter((scope) => !scopes.has(scope)) : [];
      return names.length > 0 ? [`${describe(route)} (${names.join(', ')})`] : [];
    });
    if (unknown.length > 0) {
      throw new Error(`Routes need scopes no module declares, refusing to start: ${unknown.join('; ')}`);
    }
  });
}

export function registerAccess(app: FastifyInstance, options: AccessOptions): void {
  const { keys, limiter, clock, countByAddress, lockout, metrics } = options;
  app.decorateRequest('principal', null);
  requireDeclarations(app, options.scopes);

  app.addHook('onRequest', async (request, reply) => {
    // An unmatched request has no declaration of its own: it is answered 404 by anyone, and counted.
    const access: RouteAccess | undefined = request.is404 ? 'public' : request.routeOptions.config.access;
    if (access === 'operations' || access === 'asset') return;
    // requireDeclarations makes this unreachable; should it ever be reached, refuse rather than serve.
    if (access === undefined) throw new ApiError('internal_error');

    const now = clock();
    const header = request.headers.authorization;
    const presentsKey = header !== undefined && header.trim() !== '';
    if (presentsKey && lockout.isLockedOut(request.ip, now)) {
      await countByAddress(request, reply);
      throw new ApiError('too_many_invalid_keys', {
        headers: {
          'retry-after': String(lockout.retryAfterSeconds(now)),
        },
      });
    }

    let identity: Identification;
    try {
      identity = presentsKey ? await identify(header, keys, now) : { failure: 'missing_api_key' };
    } catch (error) {
      // The key could not be checked (database down): count the caller by address so even this 503
      // carries rate-limit headers, then let the error handler answer.
      await countByAddress(request, reply);
      throw error;
    }
    if ('principal' in identity) {
      const { account } = identity.principal;
      request.accountName = account.name;
      const decision = await limiter.check(
        `a:${account.id}`,
        { perMinute: account.perMinute, perDay: account.perDay },
        now,
        account.banLiftedAt,
      );
      if (decision.event === 'banned') {
        metrics.bans.inc();
        request.log.warn(
          {
            event: 'account_banned',
            account: account.name,
            bannedUntil: new Date(decision.bannedUntil ?? now).toISOString(),
            ip: request.ip,
          },
          'account banned: it kept sending requests while rate limited',
        );
      } else if (decision.event === 'unbanned') {
        metrics.unbans.inc();
        request.log.info({ event: 'account_unbanned', account: account.name }, 'account ban lifted');
      }
      reply.headers(rateLimitHeaders(decision, now));
      if (!decision.allowed) throw new ApiError(decision.reason ?? 'rate_limited');
      request.principal = identity.principal;
      if (access !== 'public') requireScopes(identity.principal.scopes, access.scopes);
      return;
    }
    if (presentsKey && !(await lockout.recordFailure(request.ip, now))) {
      await countByAddress(request, reply);
      throw new ApiError('too_many_invalid_keys', {
        headers: {
          'retry-after': String(lockout.retryAfterSeconds(now)),
        },
      });
    }
    if (!(await countByAddress(request, reply))) throw new ApiError('rate_limited');
    if (access === 'public') return;
    const error = identity.failure === 'missing_api_key' ? '' : `, error="invalid_token"`;
    throw new ApiError(identity.failure, {
      headers: {
        'www-authenticate': `Bearer realm="pet-adoption"${error}`,
      },
    });
  });
}
