/**
 * Builds the HTTP application from its parts. Knows nothing about sockets, signals or environment
 * variables: server.ts does that, and tests call buildApp() directly with their own backends and clock.
 */
import { Ajv } from 'ajv';
import addFormatsPlugin from 'ajv-formats';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Registry } from 'prom-client';
import { systemClock, type Clock } from './clock.js';
import {
  DEFAULT_MAX_CONNECTIONS,
  DEFAULT_OVERLOAD_MAX_IN_FLIGHT,
  DEFAULT_OVERLOAD_QUEUE_MS,
  type Config,
} from './config.js';
import { DEFAULT_HEADERS_TIMEOUT_MS, DEFAULT_REQUEST_TIMEOUT_MS } from './config-parsers.js';
import type { Database } from './db/database.js';
import { addressCounter, registerAccess } from './http/access.js';
import { registerErrorHandling, sendError, toApiError } from './http/error-handler.js';
import { ApiError } from './http/errors.js';
import { healthRoutes } from './http/health.js';
import { clientErrorHandler, guardConnections, registerHostCheck } from './http/http-edge.js';
import { registerMergePatch } from './http/merge-patch.js';
import { registerWellFormedBodies } from './http/well-formed.js';
import { guardedSerializerBuilder, skippedRowCounter, SkippedRowSink } from './http/row-guard.js';
import { deriveMethodNotAllowed, type MethodNotAllowed } from './http/method-not-allowed.js';
import { registerCostMetrics } from './http/cost-metrics.js';
import { createRegistry, registerObservability, requestId } from './http/observability.js';
import { registerOpenApi } from './http/openapi.js';
import { Cursors } from './http/cursors.js';
import { secretStore } from './db/secrets.js';
import { registerPublicUrl } from './http/public-url.js';
import { registerOverload } from './http/overload.js';
import { errorSchema } from './http/responses.js';
import { hashApiKey, isWellFormedApiKey } from './modules/accounts/index.js';
import { accountRepository } from './modules/accounts/index.js';
import { componentsOf, errorCatalogueOf } from './modules/declared.js';
import { MODULES } from './modules/index.js';
import type { ApiModule } from './modules/module.js';
import { scopeCatalogue, allScopes } from './modules/scopes.js';
import { responseHeaders } from './http/headers.js';
import { RateLimiter } from './ratelimit/limiter.js';
import { AuthFailureLockout } from './ratelimit/lockout.js';
import type { CounterStore } from './ratelimit/store.js';

type RequiredSetting =
  | 'unauthenticatedPerMinute'
  | 'banThresholdFactor'
  | 'banSeconds'
  | 'trustProxy'
  | 'authFailuresPerMinute'
  | 'corsOrigins';

/** What buildApp needs of the configuration; the rest (server and modules' settings) falls back to defaults. */
export type AppConfig = Pick<Config, RequiredSetting> & Partial<Omit<Config, RequiredSetting>>;

export interface AppOptions {
  config: AppConfig;
  database: Database;
  counterStore: CounterStore;
  clock?: Clock;
  /** Omitted: no logging (tests). */
  logger?: FastifyBaseLogger;
  /** The resource modules to serve; all of them (src/modules/index.ts) unless given. */
  modules?: ApiModule[];
  /** True while the process is shutting down: /readyz answers 503 so balancers route away. */
  draining?: () => boolean;
  /** The Prometheus registry /metrics serves; a new one unless given (the server shares it with the dispatcher). */
  registry?: Registry;
  /** False when /metrics has a listener of its own (METRICS_PORT): the API port answers it 404. */
  metricsOnApi?: boolean;
}

export const BODY_LIMIT = 16 * 1024;
const ROUTER_OPTIONS = { ignoreTrailingSlash: false, maxParamLength: 200 };

function makeAjv(coerce: boolean): Ajv {
  // Query strings, path parameters and headers arrive as text and are coerced; JSON bodies are not, so
  // `"categoryId": "5"` is rejected instead of silently accepted.
  const ajv = new Ajv({
    coerceTypes: coerce,
    useDefaults: coerce,
    removeAdditional: false,
    allErrors: !coerce,
    strict: false,
  });
  // ajv-formats is CommonJS; its default export is the plugin function itself at run time.
  (addFormatsPlugin as unknown as (ajv: Ajv) => Ajv)(ajv);
  // int64 range; beyond 2^53 doubles are inexact, which only matters for ids the service never issues.
  ajv.addFormat('int64', {
    type: 'number',
    validate: (n: number) => Number.isInteger(n) && Math.abs(n) <= 2 ** 63,
  });
  return ajv;
}

export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const { config, database, counterStore } = options;
  const modules = options.modules ?? MODULES;
  const clock = options.clock ?? systemClock;

  const headersTimeout = config.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS;
  const requestTimeout = config.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;

  const limiter = new RateLimiter(counterStore, config);
  const countByAddress = addressCounter(limiter, config.unauthenticatedPerMinute, clock);
  const lockout = new AuthFailureLockout(limiter, config.authFailuresPerMinute);
  // The `Allow` list of each /v1 path, known once every route is (see method-not-allowed.ts).
  const derived: { methods?: MethodNotAllowed } = {};
  const headers = responseHeaders({
    corsOrigins: config.corsOrigins,
    allowOf: (request) => derived.methods?.allowFor(request),
  });

  // A list page leaves out a row that cannot be serialized instead of failing whole (http/row-guard.ts).
  const skippedRows = new SkippedRowSink();
  const app = Fastify({
    loggerInstance: options.logger,
    schemaController: { compilersFactory: { buildSerializer: guardedSerializerBuilder(skippedRows) } },
    bodyLimit: BODY_LIMIT,
    trustProxy: config.trustProxy,
    // observability.ts logs one line per request instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    requestIdHeader: false,
    genReqId: (req) => requestId(req.headers['x-request-id']),
    // While closing, keep serving requests that arrive on open connections (the stores close only after the
    // app has), so a rolling restart loses nothing and no response escapes the Error shape.
    return503OnClosing: false,
    routerOptions: ROUTER_OPTIONS,
    frameworkErrors: (error, request, reply) => {
      // Raised before the onRequest hooks (e.g. a malformed percent-encoding), so the request id and the
      // caller's address quota are applied here.
      reply.header('x-request-id', request.id);
      const fallback = toApiError(error) ?? new ApiError('bad_request');
      // These answers skip every hook, onSend included.
      reply.statusCode = fallback.status;
      headers.apply(request, reply);
      countByAddress(request, reply).then(
        (allowed) => sendError(reply, allowed ? fallback : new ApiError('rate_limited')),
        () => sendError(reply, fallback),
      );
    },
    // Requests Node's HTTP parser cannot read (or that time out) never reach Fastify; answered in the Error shape.
    clientErrorHandler,
    // Whole-request bound (headers and body); Node answers its expiry through clientErrorHandler (408).
    requestTimeout,
    http: {
      headersTimeout,
      // Node checks both timeouts only this often (30 s by default), which would make them loose bounds.
      connectionsCheckingInterval: Math.max(25, Math.min(250, Math.floor(headersTimeout / 4))),
      // Node's own missing-Host answer is an empty 400; registerHostCheck answers in the Error shape instead.
      requireHostHeader: false,
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  const bodyAjv = makeAjv(false);
  const textAjv = makeAjv(true);
  app.setValidatorCompiler(({ schema, httpPart }) =>
    (httpPart === 'body' ? bodyAjv : textAjv).compile(schema as object),
  );
  // Only JSON bodies are accepted; anything else is a 415.
  app.removeContentTypeParser('text/plain');
  // JSON Merge Patch, parsed like JSON, for the routes that declare it (updatePet).
  registerMergePatch(app);
  // A lone surrogate anywhere in a JSON body is a 400 for every route, before its own checks.
  registerWellFormedBodies(app);

  const registry = options.registry ?? createRegistry();
  skippedRows.log = app.log as FastifyBaseLogger;
  skippedRows.counter = skippedRowCounter(registry);
  app.decorate('unreadableRows', skippedRows);
  const metrics = registerObservability(app, registry, { counterStore, database });
  registerCostMetrics(registry, database, counterStore);
  // First after the request id: a refusal under overload costs no key lookup and no database work.
  const overload = registerOverload(app, {
    maxInFlight: config.overloadMaxInFlight ?? DEFAULT_OVERLOAD_MAX_IN_FLIGHT,
    queueMs: config.overloadQueueMs ?? DEFAULT_OVERLOAD_QUEUE_MS,
    registry,
    clock,
  });
  app.decorate('requestsAdmitted', overload.admitted);
  // Each open connection holds buffers and parser state; beyond this many, new ones are closed on accept,
  // so memory stays bounded whatever the number of clients.
  app.server.maxConnections = config.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
  // 405s are derived from every /v1 route once all exist (onReady), answered where a 404 would be.
  derived.methods = deriveMethodNotAllowed(app, ROUTER_OPTIONS);
  registerErrorHandling(app, derived.methods.answer);
  guardConnections(app.server);
  // Before access: a CORS preflight is answered without a key and without being counted.
  headers.register(app);
  registerPublicUrl(app, config.publicUrl);
  registerHostCheck(app, countByAddress);
  const accounts = database.repository(accountRepository);
  const keys = {
    isWellFormed: isWellFormedApiKey,
    find: (key: string) => accounts.findKeyByHash(hashApiKey(key)),
  };
  registerAccess(app, {
    keys,
    scopes: new Set(allScopes()),
    limiter,
    clock,
    countByAddress,
    lockout,
    metrics,
  });

  // Component schemas are registered once: routes reference them with $ref (see http/schemas.ts `ref`),
  // and the OpenAPI document lists them under components.schemas.
  const errors = errorCatalogueOf(modules);
  for (const schema of [errorSchema(errors), ...componentsOf(modules)]) {
    app.addSchema(schema);
    bodyAjv.addSchema(schema);
    textAjv.addSchema(schema);
  }

  await registerOpenApi(app, {
    tags: modules.flatMap((m) => (m.tag ? [m.tag] : [])),
    scopes: scopeCatalogue(),
    errors,
    publicUrl: config.publicUrl,
  });
  // Every instance on one database issues and reads the same cursors (CURSOR_SECRET, else the database's).
  const cursors = new Cursors(config.cursorSecret ?? (await database.repository(secretStore).get('cursor')));
  for (const module of modules) {
    await app.register(module.routes, { prefix: '/v1', database, clock, config, modules, cursors });
  }
  await app.register(healthRoutes, {
    database,
    counterStore,
    registry,
    draining: options.draining,
    metrics: options.metricsOnApi ?? true,
    shedding: overload.shedding,
  });
  app.get('/v1/openapi.json', { config: { access: 'public' }, schema: { hide: true } }, () => app.swagger());

  return app;
}
