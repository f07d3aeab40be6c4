/**
 * `listingsNear` on PostgreSQL + Redis: the same 100,000-pet catalogue in a schema of its own and a Redis
 * key prefix of its own, both dropped afterwards; skipped when either server is unreachable.
 */
import { externalServicesAvailable, PG_URL, REDIS_URL, uniqueName } from '../../support/services.js';
import { terminate } from '../../support/processes.js';
import { dropSchema, postgresUrl } from '../../support/postgres.js';
import { deleteKeys } from '../../support/redis.js';
import { measureSameBytes, startCatalogue, type Catalogue } from '../lib/catalogue.js';
import { defineScenario, Skip } from '../lib/scenario.js';
import { trimLog, logFile } from '../lib/service.js';
import { NEAR_PATH } from './listingsNear.js';

interface State {
  log: (line: string) => void;
  schema: string;
  prefix: string;
  catalogue?: Catalogue;
}

async function cleanup(state: State): Promise<void> {
  if (state.catalogue) await terminate(state.catalogue.server);
  trimLog(logFile('service-catalogue-postgres'));
  await dropSchema(state.schema).catch((e: Error) =>
    state.log(`could not drop ${state.schema}: ${e.message}`),
  );
  await deleteKeys(REDIS_URL, state.prefix).catch((e: Error) =>
    state.log(`could not delete Redis keys ${state.prefix}*: ${e.message}`),
  );
}

export default defineScenario({
  name: 'listingsPostgres',
  label: `${NEAR_PATH} on PostgreSQL + Redis (100,000 pets)`,
  order: 340,
  tags: ['catalogue', 'postgres'],
  usesSqlite: false,
  target: { bounds: [{ metric: 'ratio', atLeast: 0.15 }] },
  async setup(ctx): Promise<State> {
    if (!(await externalServicesAvailable())) {
      throw new Skip(`PostgreSQL at ${PG_URL} or Redis at ${REDIS_URL} is unreachable`);
    }
    const schema = uniqueName('bench');
    const state: State = { log: ctx.log, schema, prefix: `${schema}:` };
    try {
      state.catalogue = await startCatalogue(ctx, 'service-catalogue-postgres', {
        DATABASE_URL: postgresUrl(schema),
        REDIS_URL,
        REDIS_PREFIX: state.prefix,
        LOG_LEVEL: 'info',
        NODE_OPTIONS: '',
      });
      return state;
    } catch (error) {
      await cleanup(state);
      throw error;
    }
  },
  measure: async (ctx, state) =>
    (await measureSameBytes(ctx, state.catalogue!, 'listings near (PostgreSQL + Redis)', NEAR_PATH)).outcome,
  teardown: cleanup,
});
