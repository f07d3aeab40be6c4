/** listOrders?limit=20 on PostgreSQL + Redis (reported), over the same orders as `listOrders`; skipped without them. */
import { externalServicesAvailable, PG_URL, REDIS_URL } from '../../support/services.js';
import { listOrdersLoad, startListOrdersService, type OrdersService } from '../lib/orders.js';
import { defineScenario, Skip } from '../lib/scenario.js';
import { LIST_ORDERS_PETS } from './listOrders.js';

export default defineScenario<OrdersService>({
  name: 'listOrdersPostgres',
  label: 'GET /v1/store/orders?limit=20 on PostgreSQL + Redis',
  order: 206,
  tags: ['postgres'],
  usesSqlite: false,
  async setup(ctx) {
    if (!(await externalServicesAvailable())) {
      throw new Skip(`PostgreSQL at ${PG_URL} or Redis at ${REDIS_URL} is unreachable`);
    }
    return startListOrdersService(ctx, 'postgres', LIST_ORDERS_PETS);
  },
  load: listOrdersLoad,
  teardown: (s) => s.cleanup(),
});
