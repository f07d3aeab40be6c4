/**
 * `405 method_not_allowed` with an `Allow` header for every /v1 path, derived from the router once every
 * route exists: /v1 routes are collected as they are registered, and at `onReady` (after which no route can
 * be added) a second router is built holding, for each collected path, the methods it does not answer. The
 * not-found handler asks it before answering 404. So a route added by a module registered last, or added to
 * the app just before it starts, gets its 405s like every other (test/method-not-allowed.test.ts).
 *
 * The second router is find-my-way, the router Fastify itself uses, with the same options, so a request
 * target is matched the way Fastify matched it (absolute-form, percent-encoding, query string).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import FindMyWay, { type HTTPMethod } from 'find-my-way';
import { ApiError } from './errors.js';

const ALL_METHODS: HTTPMethod[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

function isApiRoute(url: string): boolean {
  return url.startsWith('/v1/') && !url.startsWith('/v1/docs');
}

export interface MethodNotAllowed {
  /** For the not-found handler: the 405 a request deserves, if its path exists with other methods. */
  answer(request: FastifyRequest): ApiError | undefined;
  /** The `Allow` list of the path a request names, when it names a /v1 path but not by its method. */
  allowFor(request: FastifyRequest): string | undefined;
}

/** Call before any route is registered; `routerOptions` must be the app's. */
export function deriveMethodNotAllowed(
  app: FastifyInstance,
  routerOptions: { ignoreTrailingSlash: boolean; maxParamLength: number },
): MethodNotAllowed {
  const methodsByPath = new Map<string, Set<string>>();
  app.addHook('onRoute', (route) => {
    if (!isApiRoute(route.url)) return;
    const methods = methodsByPath.get(route.url) ?? new Set<string>();
    for (const m of [route.method].flat()) methods.add(m);
    methodsByPath.set(route.url, methods);
  });

  let others: FindMyWay.Instance<FindMyWay.HTTPVersion.V1> | undefined;
  app.addHook('onReady', (done) => {
    others = FindMyWay(routerOptions);
    for (const [url, methods] of methodsByPath) {
      const allow = [...methods].sort().join(', ');
      const missing = ALL_METHODS.filter((m) => !methods.has(m));
      if (missing.length > 0) others.on(missing, url, () => {}, { allow });
    }
    done();
  });

  const allowFor = (request: FastifyRequest): string | undefined => {
    const found = others?.find(request.method as HTTPMethod, request.raw.url ?? '/');
    return (found?.store as { allow?: string } | undefined)?.allow;
  };
  return {
    allowFor,
    answer(request) {
      const allow = allowFor(request);
      return allow === undefined ? undefined : new ApiError('method_not_allowed', { headers: { allow } });
    },
  };
}
