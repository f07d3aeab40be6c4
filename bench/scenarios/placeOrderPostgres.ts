/** placeOrder on PostgreSQL + Redis (reported), each request on a fresh available pet; skipped without them. */
import { externalServicesAvailable, PG_URL, REDIS_URL } from '../../support/services.js';
import { placeOrderLoad, startOrdersService, type OrdersService } from '../lib/orders.js';
import { defineScenario, Skip } from '../lib/scenario.js';
import { ORDER_PETS } from './placeOrder.js';

export default defineScenario<OrdersService>({
  name: 'placeOrderPostgres',
  label: 'POST /v1/store/orders on PostgreSQL + Redis',
  order: 205,
  tags: ['postgres'],
  usesSqlite: false,
  async setup(ctx) {
    if (!(await externalServicesAvailable())) {
      throw new Skip(`PostgreSQL at ${PG_URL} or Redis at ${REDIS_URL} is unreachable`);
    }
    return startOrdersService(ctx, 'postgres', ORDER_PETS);
  },
  load: placeOrderLoad,
  teardown: (s) => s.cleanup(),
});
