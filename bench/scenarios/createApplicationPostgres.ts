/** createApplication on PostgreSQL + Redis; skipped without them. */
import { externalServicesAvailable, PG_URL, REDIS_URL } from '../../support/services.js';
import { freshLoad, startApplicationsService, type ApplicationsService } from '../lib/applications.js';
import { defineScenario, Skip } from '../lib/scenario.js';
import { APPLICATION_PETS } from './createApplication.js';

export default defineScenario<ApplicationsService>({
  name: 'createApplicationPostgres',
  label: 'POST /v1/applications on PostgreSQL + Redis',
  order: 208,
  tags: ['applications', 'postgres'],
  usesSqlite: false,
  target: { bounds: [{ metric: 'ratio', atLeast: 0.06 }] },
  async setup(ctx) {
    if (!(await externalServicesAvailable())) {
      throw new Skip(`PostgreSQL at ${PG_URL} or Redis at ${REDIS_URL} is unreachable`);
    }
    return startApplicationsService(ctx, 'postgres', { pets: APPLICATION_PETS });
  },
  load: (s) => freshLoad(s, s.submissions),
  teardown: (s) => s.cleanup(),
});
