/** applicationsDepth on PostgreSQL + Redis; skipped without them. */
import { externalServicesAvailable, PG_URL, REDIS_URL } from '../../support/services.js';
import {
  DEPTH,
  measureDepth,
  startApplicationsService,
  type ApplicationsService,
} from '../lib/applications.js';
import { defineScenario, Skip } from '../lib/scenario.js';
import { QUEUE_APPLICATIONS, QUEUE_PETS } from './listApplications.js';

export default defineScenario<ApplicationsService>({
  name: 'applicationsDepthPostgres',
  label: `GET /v1/applications?status=submitted, page ${DEPTH + 1} ÷ page 1 on PostgreSQL + Redis`,
  order: 211,
  tags: ['applications', 'postgres'],
  usesSqlite: false,
  target: { bounds: [{ metric: 'cost', atMost: 1.5 }] },
  async setup(ctx) {
    if (!(await externalServicesAvailable())) {
      throw new Skip(`PostgreSQL at ${PG_URL} or Redis at ${REDIS_URL} is unreachable`);
    }
    return startApplicationsService(ctx, 'postgres', { pets: QUEUE_PETS, queue: QUEUE_APPLICATIONS });
  },
  measure: (ctx, s) => measureDepth(ctx, s, 'postgres'),
  teardown: (s) => s.cleanup(),
});
