/**
 * updatePet on PostgreSQL + Redis: the same renames, over the 10,000 pets `pet-adoption seed` gives a user
 * (every one with a profile and its search words); skipped without PostgreSQL and Redis. Judged since
 * migration 027 (docs/performance.md, "PATCH on PostgreSQL").
 */
import { externalServicesAvailable, PG_URL, REDIS_URL } from '../../support/services.js';
import { startOrdersService, updatePetLoad, type OrdersService } from '../lib/orders.js';
import { defineScenario, Skip } from '../lib/scenario.js';

const PETS = 10_000;

export default defineScenario<OrdersService>({
  name: 'updatePetPostgres',
  label: 'PATCH /v1/pets/{id} on PostgreSQL + Redis',
  order: 204,
  tags: ['postgres'],
  usesSqlite: false,
  target: { bounds: [{ metric: 'ratio', atLeast: 0.08 }] },
  async setup(ctx) {
    if (!(await externalServicesAvailable())) {
      throw new Skip(`PostgreSQL at ${PG_URL} or Redis at ${REDIS_URL} is unreachable`);
    }
    return startOrdersService(ctx, 'postgres', PETS);
  },
  load: (s) =>
    updatePetLoad(s.server.child.pid!, s.server.origin, { authorization: `Bearer ${s.key}` }, PETS),
  teardown: (s) => s.cleanup(),
});
