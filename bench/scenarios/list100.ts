/**
 * What an adopter actually runs: the largest page, filtered by status (the `(status, id)` index), against a
 * baseline of its own: a bare node:http server answering one recorded 100-row response byte for byte, so
 * the ratio compares the same bytes on the wire (the shared baseline answers the 20-row page).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { terminate, type Server } from '../../support/processes.js';
import { Interleaved } from '../lib/load.js';
import { defineScenario, fromMeasured } from '../lib/scenario.js';
import { recordResponse, scriptArgv, type SqliteService } from '../lib/service.js';

const PATH = '/v1/pets?status=available&limit=100';

interface State {
  service: SqliteService;
  baseline: Server;
}

export default defineScenario<State>({
  name: 'list100',
  label: `GET ${PATH} (ratio to its own same-bytes baseline)`,
  order: 70,
  usesSqlite: true,
  target: { bounds: [{ metric: 'ratio', atLeast: 0.4 }] },
  async setup(ctx) {
    const service = await ctx.sqlite();
    const file = join(service.dbPath, '..', 'recorded-100.json');
    writeFileSync(file, JSON.stringify(await recordResponse(`${service.origin}${PATH}`, service.key)));
    const baseline = await ctx.serve(
      'baseline (100 rows)',
      'baseline',
      {},
      scriptArgv('baseline-server.ts', file),
    );
    return { service, baseline };
  },
  async measure(ctx, { service, baseline }) {
    const own = new Interleaved(
      { pid: baseline.child.pid!, url: `${baseline.origin}${PATH}` },
      ctx.settings,
      ctx.log,
    );
    const outcome = fromMeasured(
      await own.measure(`GET ${PATH}`, {
        pid: service.pid,
        url: `${service.origin}${PATH}`,
        headers: service.auth,
      }),
    );
    const b = own.summary();
    const note = `own baseline ${b.rps.toFixed(0)} req/s, ${b.cpuUs?.toFixed(0) ?? '?'} µs/req`;
    outcome.row.note = outcome.row.note ? `${outcome.row.note}; ${note}` : note;
    return outcome;
  },
  teardown: async ({ baseline }) => void (await terminate(baseline)),
});
