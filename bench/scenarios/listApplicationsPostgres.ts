/** listApplications on PostgreSQL + Redis (its own 100,000 applications); skipped without them. */
import { externalServicesAvailable, PG_URL, REDIS_URL } from '../../support/services.js';
import { QUEUE_PATH, startApplicationsService, type ApplicationsService } from '../lib/applications.js';
import { defineScenario, Skip } from '../lib/scenario.js';
import { QUEUE_APPLICATIONS, QUEUE_PETS } from './listApplications.js';

export default defineScenario<ApplicationsService>({
  name: 'listApplicationsPostgres',
  label: 'GET /v1/applications?status=submitted on PostgreSQL + Redis',
  order: 209,
  tags: ['applications', 'postgres'],
  usesSqlite: false,
  target: { bounds: [{ metric: 'ratio', atLeast: 0.25 }] },
  async setup(ctx) {
    if (!(await externalServicesAvailable())) {
      throw new Skip(`PostgreSQL at ${PG_URL} or Redis at ${REDIS_URL} is unreachable`);
    }
    return startApplicationsService(ctx, 'postgres', { pets: QUEUE_PETS, queue: QUEUE_APPLICATIONS });
  },
  load: (s) => ({ pid: s.server.child.pid!, url: `${s.server.origin}${QUEUE_PATH}`, headers: s.auth }),
  teardown: (s) => s.cleanup(),
});
