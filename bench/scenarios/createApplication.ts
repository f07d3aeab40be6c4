/** POST /v1/applications on SQLite, each from a new applicant (so neither the one-open rule nor the limit refuses). */
import { freshLoad, startApplicationsService, type ApplicationsService } from '../lib/applications.js';
import { defineScenario } from '../lib/scenario.js';

/** Pets the new applications cycle over (half of them available; many applications per pet is allowed). */
export const APPLICATION_PETS = 20_000;

export default defineScenario<ApplicationsService>({
  name: 'createApplication',
  label: 'POST /v1/applications (each from a new applicant)',
  order: 97,
  tags: ['applications'],
  usesSqlite: false,
  target: { bounds: [{ metric: 'ratio', atLeast: 0.15 }] },
  setup: (ctx) => startApplicationsService(ctx, 'sqlite', { pets: APPLICATION_PETS }),
  load: (s) => freshLoad(s, s.submissions),
  teardown: (s) => s.cleanup(),
});
