/**
 * A reference point, not the service: the whole service (same app, key check, rate limits, validation,
 * serialization, headers, access log line, metrics, configured from the same environment) with one thing
 * taken away: `listPets` answers from a page held in memory instead of querying the database. Its ratio is
 * the most any work on the page query could reach; what separates it from the Fastify floor is the cost
 * of everything else a request must do.
 *
 *   DATABASE_URL=… PORT=… node --import tsx bench/stack-server.ts
 */
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { createCounterStore } from '../src/ratelimit/index.js';
import { createLogger } from '../src/server.js';
import { createStorage } from '../src/storage/index.js';

const config = loadConfig(process.env);
const logger = createLogger(config);
const storage = await createStorage(config);
await storage.migrate();
// One more row than the largest page the benchmark asks for, so the Link header is still produced.
const page = await storage.listPets({ limit: 101 });
storage.listPets = (query) => Promise.resolve(page.slice(0, query.limit));
const counterStore = await createCounterStore(config, {
  installationId: await storage.installationId(),
  logger,
});
const app = await buildApp({ config, storage, counterStore, logger });
const address = await app.listen({ port: config.port, host: config.host });
process.stderr.write(`service stack (page from memory) listening on ${address}/v1\n`);
process.on('SIGTERM', () => {
  void app
    .close()
    .then(() => Promise.all([counterStore.close(), storage.close()]))
    .then(() => process.exit(0));
});
