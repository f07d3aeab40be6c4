/**
 * A reference point, not the service: the whole service (same app, key check, rate limits, validation,
 * serialization, headers, access log line, metrics, configured from the same environment) with one thing
 * taken away: `pets.list` answers from a page held in memory instead of querying the database. Its ratio is
 * the most any work on the page query could reach; what separates it from the Fastify floor is the cost
 * of everything else a request must do.
 *
 *   DATABASE_URL=… PORT=… node --import tsx bench/stack-server.ts
 */
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { createCounterStore } from '../src/ratelimit/index.js';
import { createLogger } from '../src/server.js';
import { openDatabase } from '../src/db/index.js';
import { petRepository } from '../src/modules/pets/repository.js';

const config = loadConfig(process.env);
const logger = createLogger(config);
const database = await openDatabase(config);
await database.migrate();
// One more row than the largest page the benchmark asks for, so the Link header is still produced.
const pets = database.repository(petRepository);
const page = await pets.list({ limit: 101 });
// The app gets this same repository instance (one per database), so the route answers from memory.
pets.list = (query) => Promise.resolve(page.slice(0, query.limit));
const counterStore = await createCounterStore(config, {
  installationId: await database.installationId(),
  logger,
});
const app = await buildApp({ config, database, counterStore, logger });
const address = await app.listen({ port: config.port, host: config.host });
process.stderr.write(`service stack (page from memory) listening on ${address}/v1\n`);
process.on('SIGTERM', () => {
  void app
    .close()
    .then(() => Promise.all([counterStore.close(), database.close()]))
    .then(() => process.exit(0));
});
