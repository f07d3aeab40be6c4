/**
 * Reference, not the service: the whole service (key check, limits, log line, metrics) with only the page
 * query taken out (`listPets` answers from memory): the ceiling for any work on storage.
 */
import { writeFileSync } from 'node:fs';
import { terminate, type Server } from '../../support/processes.js';
import { defineScenario } from '../lib/scenario.js';
import { logFile, scriptArgv } from '../lib/service.js';

export default defineScenario({
  name: 'stack',
  label: 'reference: the service, page served from memory',
  note: 'the whole service minus the page query: the ceiling for any storage work (bench/stack-server.ts)',
  order: 60,
  tags: ['reference'],
  usesSqlite: true,
  async setup(ctx): Promise<{ server: Server; auth: Record<string, string> }> {
    const s = await ctx.sqlite();
    const server = await ctx.serve('service stack', 'stack', s.env, scriptArgv('stack-server.ts'));
    return { server, auth: s.auth };
  },
  load: ({ server, auth }) => ({
    pid: server.child.pid!,
    url: `${server.origin}/v1/pets?limit=20`,
    headers: auth,
  }),
  async teardown({ server }) {
    await terminate(server);
    // Its access log is the service's, one line per request: nothing in it worth keeping.
    writeFileSync(logFile('stack'), '');
  },
});
