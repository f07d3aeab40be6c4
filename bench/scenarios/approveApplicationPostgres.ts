/**
 * POST /v1/applications/{id}/approve on PostgreSQL + Redis: each request approves another application in
 * review for its own available pet (the order placed, the pet held, the events appended, one transaction).
 */
import { externalServicesAvailable, PG_URL, REDIS_URL } from '../../support/services.js';
import { freshLoad, startApplicationsService, type ApplicationsService } from '../lib/applications.js';
import { defineScenario, Skip } from '../lib/scenario.js';

/** Applications in review: each approved once; far more than a full run approves (its pool is handed over). */
const APPROVABLE = 20_000;

export default defineScenario<ApplicationsService>({
  name: 'approveApplicationPostgres',
  label: 'POST /v1/applications/{id}/approve on PostgreSQL + Redis (each a new application and pet)',
  order: 210,
  tags: ['applications', 'postgres'],
  usesSqlite: false,
  target: { bounds: [{ metric: 'ratio', atLeast: 0.06 }] },
  async setup(ctx) {
    if (!(await externalServicesAvailable())) {
      throw new Skip(`PostgreSQL at ${PG_URL} or Redis at ${REDIS_URL} is unreachable`);
    }
    return startApplicationsService(ctx, 'postgres', { pets: APPROVABLE * 2, approvable: APPROVABLE });
  },
  load: (s) => freshLoad(s, s.approvals),
  teardown: (s) => s.cleanup(),
});
