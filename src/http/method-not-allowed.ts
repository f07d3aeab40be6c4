/**
 * `405 method_not_allowed` with an `Allow` header for every /v1 path, derived from the router: every /v1
 * route is collected as it is registered, and once every module is in, `answerOtherMethods` adds one
 * route per path for the methods it does not answer. A /v1 route registered after that pass would get no
 * 405s, so it is refused at registration instead (a loud failure, tested in test/http.test.ts).
 */
import type { FastifyInstance, HTTPMethods } from 'fastify';
import { ApiError } from './errors.js';

const ALL_METHODS: HTTPMethods[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

export interface MethodTable {
  /** Adds the 405 routes; afterwards no /v1 route may be added. */
  answerOtherMethods(): void;
}

function isApiRoute(url: string): boolean {
  return url.startsWith('/v1/') && !url.startsWith('/v1/docs');
}

/** Call before any route is registered. */
export function collectRoutes(app: FastifyInstance): MethodTable {
  const methodsByPath = new Map<string, Set<string>>();
  let sealed = false;
  app.addHook('onRoute', (route) => {
    if (!isApiRoute(route.url)) return;
    if (sealed) {
      throw new Error(
        `${[route.method].flat().join(',')} ${route.url} was registered after the 405 routes were derived; ` +
          'register it in a module (src/modules/index.ts)',
      );
    }
    const methods = methodsByPath.get(route.url) ?? new Set<string>();
    for (const m of [route.method].flat()) methods.add(m);
    methodsByPath.set(route.url, methods);
  });

  return {
    answerOtherMethods() {
      for (const [url, methods] of [...methodsByPath]) {
        const allow = [...methods].sort().join(', ');
        const others = ALL_METHODS.filter((m) => !methods.has(m));
        if (others.length === 0) continue;
        app.route({
          method: others,
          url,
          config: { anyCaller: true },
          schema: { hide: true },
          handler: async () => {
            throw new ApiError('method_not_allowed', undefined, undefined, { allow });
          },
        });
      }
      sealed = true;
    },
  };
}
