/**
 * The list on PostgreSQL + Redis: its own schema (`DATABASE_URL=…?schema=<unique>`) and Redis key prefix,
 * both dropped afterwards; skipped when either server is unreachable. The servers are the tests'
 * (TEST_DATABASE_URL, TEST_REDIS_URL; defaults 127.0.0.1:5432/test and 127.0.0.1:6379).
 */
import { externalServicesAvailable, PG_URL, REDIS_URL, uniqueName } from '../../support/services.js';
import { terminate, type Server } from '../../support/processes.js';
import { dropSchema, postgresUrl } from '../../support/postgres.js';
import { deleteKeys } from '../../support/redis.js';
import { MemoryWatch } from '../lib/memory.js';
import { defineScenario, fromMeasured, Skip } from '../lib/scenario.js';
import { createKey, logFile, seed, trimLog } from '../lib/service.js';

const PETS = 10_000;
const LABEL = 'GET /v1/pets?limit=20 on PostgreSQL + Redis';

interface State {
  log: (line: string) => void;
  schema: string;
  prefix: string;
  server?: Server;
  memory?: MemoryWatch;
  key?: string;
}

async function cleanup(state: State): Promise<void> {
  const { log } = state;
  state.memory?.stop();
  if (state.server) await terminate(state.server);
  trimLog(logFile('service-postgres'));
  await dropSchema(state.schema).catch((e: Error) =>
    log(`could not drop schema ${state.schema}: ${e.message}`),
  );
  await deleteKeys(REDIS_URL, state.prefix).catch((e: Error) =>
    log(`could not delete Redis keys ${state.prefix}*: ${e.message}`),
  );
}

export default defineScenario({
  name: 'postgres',
  label: LABEL,
  order: 200,
  tags: ['postgres'],
  usesSqlite: false,
  // Its target in the table of docs/performance.md.
  target: { bounds: [{ metric: 'ratio', atLeast: 0.3 }] },
  async setup(ctx): Promise<State> {
    if (!(await externalServicesAvailable())) {
      throw new Skip(`PostgreSQL at ${PG_URL} or Redis at ${REDIS_URL} is unreachable`);
    }
    const schema = uniqueName('bench');
    const state: State = { log: ctx.log, schema, prefix: `${schema}:` };
    const env = {
      DATABASE_URL: postgresUrl(schema),
      REDIS_URL,
      REDIS_PREFIX: state.prefix,
      LOG_LEVEL: 'info',
      NODE_OPTIONS: '',
    };
    try {
      state.key = await createKey(env, 'bench');
      await seed(env, PETS);
      state.server = await ctx.serve('service (postgres)', 'service-postgres', env);
      state.memory = new MemoryWatch(state.server.child.pid!);
      return state;
    } catch (error) {
      await cleanup(state);
      throw error;
    }
  },
  async measure(ctx, state) {
    const outcome = fromMeasured(
      await ctx.measure(LABEL, {
        pid: state.server!.child.pid!,
        url: `${state.server!.origin}/v1/pets?limit=20`,
        headers: { authorization: `Bearer ${state.key!}` },
      }),
    );
    const peak = `peak RSS ${state.memory!.peakMb().toFixed(0)} MB`;
    outcome.row.note = outcome.row.note ? `${outcome.row.note}; ${peak}` : peak;
    return outcome;
  },
  teardown: cleanup,
});
