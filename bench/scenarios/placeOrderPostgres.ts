/** placeOrder on PostgreSQL + Redis (reported), each request on a fresh available pet; skipped without them. */
import { externalServicesAvailable, PG_URL, REDIS_URL } from '../../test/helpers.js';
import { startOrdersService, type OrdersService } from '../lib/orders.js';
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
  load: (s) => ({
    pid: s.server.child.pid!,
    url: s.server.origin,
    headers: { 'content-type': 'application/json' },
    requests: [
      {
        method: 'POST',
        path: '/v1/store/orders',
        setupRequest: (request) => ({
          ...request,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${s.nextKey()}` },
          body: JSON.stringify({ petId: s.nextAvailablePet() }),
        }),
      },
    ],
  }),
  teardown: (s) => s.cleanup(),
});
