/**
 * Listens and shuts down; nothing else. SIGTERM/SIGINT drain (docs/operations.md, "Shutdown and drain"): /readyz answers 503 for
 * DRAIN_SECONDS while everything is served, then the listener closes, every open connection is answered
 * until it closes, and only then the pools close, so a rolling restart loses no request.
 */
import { Server as NetServer, type AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import closeWithGrace from 'close-with-grace';
import Fastify, { type FastifyInstance } from 'fastify';
import pino from 'pino';
import type { Registry } from 'prom-client';
import { buildApp } from './app.js';
import type { Config } from './config.js';
import { openDatabase } from './db/index.js';
import { IDEMPOTENCY_RETENTION_MS } from './http/idempotency/index.js';
import { idempotencyRepository } from './db/idempotency/repository.js';
import { addAcceptListeners, type AcceptListeners } from './http/accept-listeners.js';
import { startHealthListener, type HealthListener } from './http/health-listener.js';
import { createRegistry } from './http/observability.js';
import { watchApiLoad } from './http/api-load.js';
import { createCounterStore } from './ratelimit/index.js';
import { eventRepository } from './modules/events/index.js';
import { MODULES } from './modules/index.js';
import { outsideRequest } from './telemetry/context.js';
import type { Tracing } from './telemetry/start.js';
import { SERVICE_VERSION } from './version.js';

export const FIRST_KEY_HINT =
  'This is a new database. Create the first API key with:\n' +
  '  npx pet-adoption keys create --account my-store\n' +
  'then call the API with: curl -H "Authorization: Bearer <key>" http://HOST:PORT/v1/pets';

/**
 * The address a server is bound to, as a URL origin: what it really listens on (`http://0.0.0.0:3000` when
 * bound to every interface), not the first address Fastify would pick to print.
 */
export function boundOrigin(server: NetServer): string {
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}`;
}

/** Where a local client can reach a server bound to `origin`: a wildcard bind is reached on loopback. */
function reachableOrigin(origin: string): string {
  return origin.replace(/^http:\/\/(0\.0\.0\.0|\[::\])(?=:)/, 'http://localhost');
}

/**
 * METRICS_PORT: /metrics on a listener of its own (same HOST), so the API port need not expose it. Nothing
 * else is served there; every other path is a plain 404.
 */
async function listenMetrics(registry: Registry, host: string, port: number): Promise<FastifyInstance> {
  const metrics = Fastify({ logger: false });
  metrics.get('/metrics', async (_request, reply) =>
    reply.type(registry.contentType).send(await registry.metrics()),
  );
  await metrics.listen({ host, port });
  return metrics;
}

/**
 * JSON lines on stdout, written from a buffer off the request path. Every line names the service and its
 * version (several services may share a log pipeline) and its level by name (`"level":"info"`, not pino's
 * number), as log pipelines expect.
 */
export function createLogger(config: Pick<Config, 'logLevel'>): pino.Logger {
  return pino(loggerOptions(config), logDestination());
}

/** What one write to stdout may take: far more than the lines of one busy event-loop turn. */
export const LOG_WRITE_BYTES = 1024 * 1024;

export interface LogDestination extends pino.DestinationStream {
  flush(cb?: (err?: Error) => void): void;
  /** The writer underneath: its 'write' events give the bytes of each completed write, 'drain' an empty buffer. */
  readonly writer: ReturnType<typeof pino.destination>;
}

/**
 * Log lines to a descriptor (stdout unless told) through pino's own asynchronous writer (sonic-boom), in its
 * buffer mode.
 *
 * Why not `pino.destination({ sync: false })` as it comes: it has one write in flight at a time, and each
 * write takes at most `maxWrite` bytes (16 KiB). A busy turn of the event loop logs more than that (a line
 * per request), so under load the writer fell further behind with every turn: the unwritten lines grew for
 * as long as the load lasted, held memory through a flood and after it, and cost CPU while they drained.
 * Raising `maxWrite` alone does not help in the default (string) mode, which measures the byte length of
 * the chunk being filled on every line, copying it each time. In buffer mode a chunk is a list of buffers
 * with known lengths, so one write can carry every line of a turn and a line costs one small copy.
 * pino writes strings; each line becomes a Buffer here.
 */
export function logDestination(fd = 1): LogDestination {
  const writer = pino.destination({
    dest: fd,
    sync: false,
    contentMode: 'buffer',
    maxWrite: LOG_WRITE_BYTES,
  });
  // sonic-boom's types declare write(string) only; in buffer mode it takes Buffers (its README). Called
  // through the object each time: on EPIPE pino replaces the stream's write with a no-op.
  const buffers = writer as unknown as { write(line: Buffer): boolean };
  return {
    writer,
    write: (line: string) => {
      buffers.write(Buffer.from(line));
    },
    flush: (cb) => writer.flush(cb),
  };
}

/** The logger's options, apart from where it writes (tests write to a stream of their own). */
export function loggerOptions(config: Pick<Config, 'logLevel'>): pino.LoggerOptions {
  return {
    level: config.logLevel,
    base: { service: 'pet-adoption', version: SERVICE_VERSION, pid: process.pid, hostname: hostname() },
    formatters: { level: (label) => ({ level: label }) },
    // Only a top-level `headers` object can carry a key: the request line's `req` is Fastify's serializer
    // output, which has no headers. (A `req.…` path would run the redaction on every request line.)
    redact: ['headers.authorization'],
  };
}

/**
 * After the listener closes, idle keep-alive connections are left open this long: a client may have
 * written its next request already, and closing the socket under it would reset that request unanswered.
 * Requests that arrive are answered with `Connection: close`; what is still idle at the deadline closes.
 */
export const CLOSE_GRACE_MS = 3_000;
/** How often every instance numbers committed events for the feed when nothing else asked (PostgreSQL). */
const FEED_PUBLISH_MS = 500;
/** Beyond drain and grace, how long requests still in flight may take before the process gives up. */
const IN_FLIGHT_MS = 10_000;
/**
 * Connections the kernel completes before the service accepts them. Node's default (511) overflows when
 * thousands of clients connect at once: Linux then drops the handshake's last ACK, the client believes it is
 * connected, and its request (a liveness probe's, say) waits for SYN-ACK retransmits, 1 s and 3 s later
 * (seen as `ListenOverflows` in `nstat`). The kernel caps it at `net.core.somaxconn` (4096 on current Linux).
 */
const LISTEN_BACKLOG = 4096;

export interface ServeOptions {
  /** Started by the caller before anything imported pg or ioredis (cli/serve.ts); flushed at the end. */
  tracing?: Tracing;
}

export async function serve(config: Config, options: ServeOptions = {}): Promise<void> {
  const logger = createLogger(config);
  const database = await openDatabase(config);
  const { fresh } = await database.migrate();
  const installationId = await database.installationId();
  const counterStore = await createCounterStore(config, { installationId, logger });
  let draining = false;
  const registry = createRegistry();
  const app = await buildApp({
    config,
    database,
    counterStore,
    logger,
    registry,
    draining: () => draining,
    metricsOnApi: config.metricsPort === undefined,
  });
  let metricsServer: FastifyInstance | undefined;
  const apiLoad = watchApiLoad(app.requestsAdmitted);
  // The modules' background work (webhooks' dispatcher).
  const tasks = MODULES.flatMap((module) =>
    module.background ? [module.background({ database, config, registry, logger, busy: apiLoad.busy })] : [],
  );
  const wakers = tasks.flatMap((task) => (task.wake ? [task] : []));
  // PostgreSQL numbers committed events for the feed after the fact (events/repository.postgres.ts): a
  // write's events are numbered right after it, and a timer numbers what other instances committed and
  // left (a process that died between its commit and its wake). Readers and the dispatcher's fan-out
  // number what they need themselves, so neither timer nor wake is needed for correctness, only to keep
  // the feed's readers from doing it.
  const events = database.repository(eventRepository);
  const publishFailed = (err: unknown): void => logger.warn({ err }, 'events feed publish failed');
  const publisher = setInterval(() => events.wake(publishFailed), FEED_PUBLISH_MS);
  publisher.unref();
  const afterWrite = (): void => {
    events.wake(publishFailed);
    for (const task of wakers) task.wake!();
  };
  // A write may have committed events: look at once rather than at the next poll. Callback style, no
  // promise per response; a wake() while a pass runs only asks for another after it.
  app.addHook('onResponse', (request, _reply, done) => {
    // The publisher's and the dispatcher's passes are not part of the request's trace (deliveries link to it).
    if (request.method !== 'GET' && request.method !== 'HEAD') outsideRequest(afterWrite);
    done();
  });

  const purge = setInterval(() => {
    const idempotency = database.repository(idempotencyRepository);
    idempotency.purge(Date.now() - IDEMPOTENCY_RETENTION_MS).catch((err: unknown) => {
      logger.warn({ err }, 'idempotency purge failed');
    });
    for (const module of MODULES) {
      module.purge?.(database, Date.now()).catch((err: unknown) => {
        logger.warn({ err }, `${module.name} purge failed`);
      });
    }
  }, 3600_000);
  purge.unref();

  // Once the listener is closed, every answer says `Connection: close`, so each kept-alive connection ends
  // right after the next request it brings.
  let stopping = false;
  // Callback style: this runs for every response, and an async hook costs a promise each time.
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (stopping) reply.header('connection', 'close');
    done(null, payload);
  });

  let health: HealthListener | undefined;
  // Set once listening; the shutdown handler, registered before, may run while they are being made.
  // eslint-disable-next-line prefer-const
  let acceptListeners: Promise<AcceptListeners> | undefined;
  const drainMs = config.drainSeconds * 1000;
  closeWithGrace({ delay: drainMs + CLOSE_GRACE_MS + IN_FLIGHT_MS }, async ({ signal, err }) => {
    if (err) logger.error({ err }, 'shutting down after an error');
    else logger.info({ signal, drainSeconds: config.drainSeconds }, 'shutting down: draining');
    draining = true;
    clearInterval(purge);
    clearInterval(publisher);
    if (!err && drainMs > 0) await delay(drainMs);
    // Extra listeners still being made at start-up are all made first: every listener closes in the same
    // turn as answers start saying `Connection: close`, or else the clients those answers send away would
    // reconnect and queue on a socket about to close, and be reset.
    const listeners = await acceptListeners;
    stopping = true;
    // net.Server's close stops listening only; http.Server's would also close the idle keep-alive
    // connections at once, resetting requests their clients had already sent on them.
    const allClosed = Promise.all([
      new Promise<void>((resolve) => NetServer.prototype.close.call(app.server, () => resolve())),
      listeners?.close(),
    ]);
    const graceOver = delay(CLOSE_GRACE_MS, undefined, { ref: false });
    await Promise.race([allClosed, graceOver]);
    // Grace deadline: connections still idle close; those with a request in flight end after its answer.
    app.server.closeIdleConnections();
    await allClosed;
    logger.info('connections closed');
    await app.close();
    await metricsServer?.close();
    // Alive until the end: a liveness probe failing during the drain would get the process killed early.
    await health?.close();
    apiLoad.stop();
    await Promise.all(tasks.map((task) => task.stop()));
    await counterStore.close();
    await database.close();
    await options.tracing?.shutdown();
    logger.flush();
  });

  // Extra listeners can join the port only if its first socket allows it (http/accept-listeners.ts).
  const listen = {
    port: config.port,
    host: config.host,
    backlog: LISTEN_BACKLOG,
    reusePort: config.acceptCopies > 0,
  };
  await app.listen(listen);
  // A performance aid, not a condition of service: the API answers meanwhile (a listener hands over from the
  // instant it listens), and where `reusePort` is not available it accepts on its own socket only.
  acceptListeners = addAcceptListeners(app.server, config.acceptCopies, LISTEN_BACKLOG);
  void acceptListeners.then(({ count, error }) => {
    if (error) logger.warn({ err: error, count }, 'fewer extra listeners than ACCEPT_COPIES asks for');
    else logger.info({ count }, 'extra listeners ready');
  });
  if (config.metricsPort !== undefined) {
    metricsServer = await listenMetrics(registry, config.host, config.metricsPort);
  }
  if (config.healthPort !== undefined) health = await startHealthListener(config.host, config.healthPort);
  for (const task of tasks) task.start();
  const origin = boundOrigin(app.server);
  const base = `${origin}/v1`;
  const metricsUrl = `${metricsServer ? boundOrigin(metricsServer.server) : origin}/metrics`;
  logger.info(
    {
      address: base,
      metrics: metricsUrl,
      storage: database.kind,
      rateLimitStore: counterStore.kind,
      installationId,
      tracing: options.tracing !== undefined,
    },
    'listening',
  );
  // One write, so that whoever waits for the announcement has the hint with it.
  let announcement = `Pet Adoption Service listening on ${base} (storage: ${database.kind}, rate limits: ${counterStore.kind})\n`;
  if (metricsServer) announcement += `Metrics on ${metricsUrl} (not on the API port)\n`;
  if (health) announcement += `Liveness on ${health.origin}/healthz\n`;
  if (fresh) {
    const hostPort = reachableOrigin(origin).replace(/^https?:\/\//, '');
    announcement += `${FIRST_KEY_HINT.replace('HOST:PORT', hostPort)}\n`;
  }
  process.stderr.write(announcement);
}
