/** listOrders?limit=20 on SQLite over a seeded set of orders (the caller holds orders:manage: every order). */
import { listOrdersLoad, startListOrdersService, type OrdersService } from '../lib/orders.js';
import { defineScenario } from '../lib/scenario.js';

export const LIST_ORDERS_PETS = 20_000;

export default defineScenario<OrdersService>({
  name: 'listOrders',
  label: 'GET /v1/store/orders?limit=20',
  order: 96,
  usesSqlite: false,
  target: { bounds: [{ metric: 'ratio', atLeast: 0.3 }] },
  setup: (ctx) => startListOrdersService(ctx, 'sqlite', LIST_ORDERS_PETS),
  load: listOrdersLoad,
  teardown: (s) => s.cleanup(),
});
