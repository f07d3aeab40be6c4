/** The staff's queue on SQLite: the first page of `submitted` applications among 100,000 (every account's). */
import { QUEUE_PATH, startApplicationsService, type ApplicationsService } from '../lib/applications.js';
import { defineScenario } from '../lib/scenario.js';

/** Applications stored, a quarter of them `submitted`. */
export const QUEUE_APPLICATIONS = 100_000;
export const QUEUE_PETS = 20_000;

export default defineScenario<ApplicationsService>({
  name: 'listApplications',
  label: 'GET /v1/applications?status=submitted (100,000 applications)',
  order: 98,
  tags: ['applications'],
  usesSqlite: false,
  target: { bounds: [{ metric: 'ratio', atLeast: 0.35 }] },
  setup: (ctx) => startApplicationsService(ctx, 'sqlite', { pets: QUEUE_PETS, queue: QUEUE_APPLICATIONS }),
  load: (s) => ({ pid: s.server.child.pid!, url: `${s.server.origin}${QUEUE_PATH}`, headers: s.auth }),
  teardown: (s) => s.cleanup(),
});
