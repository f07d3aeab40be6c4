/**
 * Reference, not the service: the yardstick, a minimal Fastify route reading 20 rows from the same
 * SQLite file per request, with no auth, rate limiting, logging, metrics or validation.
 */
import { terminate } from '../../support/processes.js';
import { defineScenario } from '../lib/scenario.js';
import { scriptArgv } from '../lib/service.js';

export default defineScenario({
  name: 'minimal',
  label: 'reference: minimal Fastify + SQLite, 20 rows',
  note: 'no auth, rate limiting, logging, metrics or validation (bench/minimal-server.ts)',
  order: 40,
  tags: ['reference'],
  usesSqlite: true,
  async setup(ctx) {
    const s = await ctx.sqlite();
    return ctx.serve('minimal reference', 'baseline', {}, scriptArgv('minimal-server.ts', s.dbPath));
  },
  load: (server) => ({ pid: server.child.pid!, url: `${server.origin}/v1/pets` }),
  teardown: async (server) => void (await terminate(server)),
});
