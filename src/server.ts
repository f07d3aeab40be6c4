/**
 * Listens and shuts down; nothing else. SIGTERM/SIGINT stop accepting connections, let in-flight requests
 * finish, then close the pools, so a rolling restart loses no request.
 */
import closeWithGrace from 'close-with-grace';
import pino from 'pino';
import { buildApp } from './app.js';
import type { Config } from './config.js';
import { openDatabase } from './db/index.js';
import { IDEMPOTENCY_RETENTION_MS } from './http/idempotency/index.js';
import { idempotencyRepository } from './http/idempotency/repository.js';
import { createCounterStore } from './ratelimit/index.js';

export const FIRST_KEY_HINT =
  'This is a new database. Create the first API key with:\n' +
  '  npx pet-adoption keys create --account my-store\n' +
  'then call the API with: curl -H "Authorization: Bearer <key>" http://HOST:PORT/v1/pets';

/** JSON lines on stdout, written from a buffer off the request path. */
export function createLogger(config: Config): pino.Logger {
  return pino(
    { level: config.logLevel, redact: ['req.headers.authorization', 'headers.authorization'] },
    pino.destination({ sync: false }),
  );
}

export async function serve(config: Config): Promise<void> {
  const logger = createLogger(config);
  const database = await openDatabase(config);
  const { fresh } = await database.migrate();
  const installationId = await database.installationId();
  const counterStore = await createCounterStore(config, { installationId, logger });
  const app = await buildApp({ config, database, counterStore, logger });

  const purge = setInterval(() => {
    const idempotency = database.repository(idempotencyRepository);
    idempotency.purge(Date.now() - IDEMPOTENCY_RETENTION_MS).catch((err: unknown) => {
      logger.warn({ err }, 'idempotency purge failed');
    });
  }, 3600_000);
  purge.unref();

  // Node's server.close() closes the connections idle at that moment; one whose request was in flight would
  // then stay open as keep-alive and hold the shutdown until close-with-grace's delay (exit 1). While stopping,
  // answers say `Connection: close`, and connections that still turn idle are closed as they do.
  let stopping = false;
  // Callback style: this runs for every response, and an async hook costs a promise each time.
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (stopping) reply.header('connection', 'close');
    done(null, payload);
  });

  closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
    if (err) logger.error({ err }, 'shutting down after an error');
    else logger.info({ signal }, 'shutting down');
    stopping = true;
    clearInterval(purge);
    const reap = setInterval(() => app.server.closeIdleConnections(), 100);
    await app.close().finally(() => clearInterval(reap));
    await counterStore.close();
    await database.close();
    logger.flush();
  });

  const address = await app.listen({ port: config.port, host: config.host });
  const base = `${address}/v1`;
  logger.info(
    { address: base, storage: database.kind, rateLimitStore: counterStore.kind, installationId },
    'listening',
  );
  process.stderr.write(
    `Pet Adoption Service listening on ${base} (storage: ${database.kind}, rate limits: ${counterStore.kind})\n`,
  );
  if (fresh) {
    const hostPort = address.replace(/^https?:\/\//, '');
    process.stderr.write(`${FIRST_KEY_HINT.replace('HOST:PORT', hostPort)}\n`);
  }
}
