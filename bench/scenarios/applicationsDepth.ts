/** The staff queue's page 51 ÷ page 1 on SQLite (keyset paging: the cost must not grow with depth). */
import {
  DEPTH,
  measureDepth,
  startApplicationsService,
  type ApplicationsService,
} from '../lib/applications.js';
import { defineScenario } from '../lib/scenario.js';
import { QUEUE_APPLICATIONS, QUEUE_PETS } from './listApplications.js';

export default defineScenario<ApplicationsService>({
  name: 'applicationsDepth',
  label: `GET /v1/applications?status=submitted, page ${DEPTH + 1} ÷ page 1 (100,000 applications)`,
  order: 99,
  tags: ['applications'],
  usesSqlite: false,
  target: { bounds: [{ metric: 'cost', atMost: 1.5 }] },
  setup: (ctx) => startApplicationsService(ctx, 'sqlite', { pets: QUEUE_PETS, queue: QUEUE_APPLICATIONS }),
  measure: (ctx, s) => measureDepth(ctx, s, 'sqlite'),
  teardown: (s) => s.cleanup(),
});
