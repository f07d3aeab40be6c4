/**
 * Overload (docs/operations.md, "Overload") on SQLite: one instance with 1,000 pets, wrk with one request in ten a POST /v1/pets,
 * 16 connections, then floods of 2,000 and 5,000 keep-alive connections for 20 s each, each followed by a
 * recovery run, while a liveness probe in a process of its own opens a new connection to GET /healthz every
 * 250 ms (1 s timeout). The reference is bare node:http answering the list's bytes (bench/baseline-server.ts),
 * flooded the same way. Needs wrk (`sudo apt-get install -y wrk`) and `ulimit -n` ≥ 6,000. See
 * bench/overload/sweep.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { terminate, type Server } from '../../support/processes.js';
import { MemoryWatch } from '../lib/memory.js';
import { defineScenario } from '../lib/scenario.js';
import { createKey, logFile, scriptArgv, seed, trimLog } from '../lib/service.js';
import { OVERLOAD_TARGET, overloadOutcome } from '../overload/outcome.js';
import { acknowledgedIds, checkPrerequisites, listedIds, sweep, timing } from '../overload/sweep.js';

export const OVERLOAD_PETS = 1000;

interface State {
  dir: string;
  recordedFile: string;
  env: Record<string, string>;
  key: string;
  service?: Server;
}

export default defineScenario<State>({
  name: 'overload',
  label: 'overload: 16 → 2,000 → 5,000 connections, 10 % POST, SQLite (1,000 pets)',
  order: 300,
  tags: ['overload'],
  // The shared service is only needed for the recorded response the bare reference answers.
  usesSqlite: true,
  ownClient: 'wrk',
  target: OVERLOAD_TARGET,
  async setup(ctx) {
    checkPrerequisites();
    const { recordedFile } = await ctx.sqlite();
    const dir = mkdtempSync(join(tmpdir(), 'pet-adoption-overload-'));
    const env = {
      DATABASE_URL: `sqlite:${join(dir, 'overload.db')}`,
      LOG_LEVEL: 'info',
      NODE_OPTIONS: '',
    };
    const key = await createKey(env, 'overload');
    await seed(env, OVERLOAD_PETS);
    return { dir, recordedFile, env, key };
  },
  async measure(ctx, state) {
    const t = timing(ctx.settings.quick);
    const bareServer = await ctx.serve('bare node:http (overload)', 'baseline-overload', {}, [
      ...scriptArgv('baseline-server.ts', state.recordedFile),
    ]);
    const bareMemory = new MemoryWatch(bareServer.child.pid!);
    let bare;
    try {
      bare = await sweep(
        { origin: bareServer.origin, pid: bareServer.child.pid!, memory: bareMemory },
        t,
        ctx.log,
        'bare node:http',
      );
    } finally {
      bareMemory.stop();
      await terminate(bareServer);
    }
    state.service = await ctx.serve('service (overload, SQLite)', 'service-overload', state.env);
    const memory = new MemoryWatch(state.service.child.pid!);
    const idsFile = join(state.dir, 'created');
    const auth = `Bearer ${state.key}`;
    try {
      const service = await sweep(
        {
          origin: state.service.origin,
          pid: state.service.child.pid!,
          auth,
          idsFile,
          memory,
          logFile: logFile('service-overload'),
        },
        t,
        ctx.log,
        'service (SQLite)',
      );
      const acknowledged = acknowledgedIds(idsFile);
      const listed = await listedIds(state.service.origin, auth);
      const missing = acknowledged.filter((id) => !listed.has(id)).length;
      return overloadOutcome(service, bare, { acknowledged: acknowledged.length, missing });
    } finally {
      memory.stop();
    }
  },
  async teardown(state) {
    if (state.service) await terminate(state.service);
    trimLog(logFile('service-overload'));
    rmSync(state.dir, { recursive: true, force: true });
  },
});
