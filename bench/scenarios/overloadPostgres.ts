/**
 * The overload sweep of `overload` (bench/overload/sweep.ts) on PostgreSQL + Redis: one instance with 1,000
 * pets in a schema of its own and a Redis key prefix of its own, both dropped afterwards; skipped when either
 * server is unreachable. The bare node:http reference is `overload`'s (run first if it was not selected).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { externalServicesAvailable, PG_URL, REDIS_URL, uniqueName } from '../../support/services.js';
import { terminate, type Server } from '../../support/processes.js';
import { dropSchema, postgresUrl } from '../../support/postgres.js';
import { deleteKeys } from '../../support/redis.js';
import { MemoryWatch } from '../lib/memory.js';
import { defineScenario, Skip } from '../lib/scenario.js';
import { createKey, logFile, seed, trimLog } from '../lib/service.js';
import { OVERLOAD_TARGET, overloadOutcome } from '../overload/outcome.js';
import {
  acknowledgedIds,
  checkPrerequisites,
  listedIds,
  sweep,
  timing,
  type SweepFigures,
} from '../overload/sweep.js';

interface State {
  log: (line: string) => void;
  dir: string;
  schema: string;
  prefix: string;
  env: Record<string, string>;
  key?: string;
  server?: Server;
}

async function cleanup(state: State): Promise<void> {
  if (state.server) await terminate(state.server);
  trimLog(logFile('service-overload-postgres'));
  rmSync(state.dir, { recursive: true, force: true });
  await dropSchema(state.schema).catch((e: Error) =>
    state.log(`could not drop schema ${state.schema}: ${e.message}`),
  );
  await deleteKeys(REDIS_URL, state.prefix).catch((e: Error) =>
    state.log(`could not delete Redis keys ${state.prefix}*: ${e.message}`),
  );
}

export default defineScenario<State>({
  name: 'overloadPostgres',
  label: 'overload: 16 → 2,000 → 5,000 connections, 10 % POST, PostgreSQL + Redis (1,000 pets)',
  order: 310,
  tags: ['overload', 'postgres'],
  usesSqlite: false,
  ownClient: 'wrk',
  target: OVERLOAD_TARGET,
  async setup(ctx) {
    checkPrerequisites();
    if (!(await externalServicesAvailable())) {
      throw new Skip(`PostgreSQL at ${PG_URL} or Redis at ${REDIS_URL} is unreachable`);
    }
    const schema = uniqueName('overload');
    const env = {
      DATABASE_URL: postgresUrl(schema),
      REDIS_URL,
      REDIS_PREFIX: `${schema}:`,
      LOG_LEVEL: 'info',
      NODE_OPTIONS: '',
    };
    const dir = mkdtempSync(join(tmpdir(), 'pet-adoption-overload-pg-'));
    const state: State = { log: ctx.log, dir, schema, prefix: env.REDIS_PREFIX, env };
    try {
      state.key = await createKey(env, 'overload');
      await seed(env, 1000);
      return state;
    } catch (error) {
      await cleanup(state);
      throw error;
    }
  },
  async measure(ctx, state) {
    const reference = await ctx.outcome('overload');
    const bare = (reference.settings?.overload as { bare?: SweepFigures } | undefined)?.bare;
    if (!bare) throw new Error('the overload scenario reported no bare node:http figures');
    state.server = await ctx.serve('service (overload, PostgreSQL)', 'service-overload-postgres', state.env);
    const memory = new MemoryWatch(state.server.child.pid!);
    const idsFile = join(state.dir, 'created');
    const auth = `Bearer ${state.key!}`;
    try {
      const service = await sweep(
        {
          origin: state.server.origin,
          pid: state.server.child.pid!,
          auth,
          idsFile,
          memory,
          logFile: logFile('service-overload-postgres'),
        },
        timing(ctx.settings.quick),
        ctx.log,
        'service (PostgreSQL + Redis)',
      );
      const acknowledged = acknowledgedIds(idsFile);
      const listed = await listedIds(state.server.origin, auth);
      const missing = acknowledged.filter((id) => !listed.has(id)).length;
      return overloadOutcome(service, bare, { acknowledged: acknowledged.length, missing });
    } finally {
      memory.stop();
    }
  },
  teardown: cleanup,
});
