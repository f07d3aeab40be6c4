/** Reference, not the service: a bare Fastify route answering the baseline's bytes, i.e. what the framework costs. */
import { terminate } from '../../support/processes.js';
import { defineScenario } from '../lib/scenario.js';
import { scriptArgv } from '../lib/service.js';

export default defineScenario({
  name: 'floor',
  label: 'reference: bare Fastify route, same bytes',
  note: 'what the framework costs (bench/floor-server.ts)',
  order: 50,
  tags: ['reference'],
  usesSqlite: true,
  async setup(ctx) {
    const s = await ctx.sqlite();
    return ctx.serve('fastify floor', 'baseline', {}, scriptArgv('floor-server.ts', s.recordedFile));
  },
  load: (server) => ({ pid: server.child.pid!, url: `${server.origin}/v1/pets?limit=20` }),
  teardown: async (server) => void (await terminate(server)),
});
