/** placeOrder on SQLite, each request on a fresh available pet (order insert + pet update, one transaction). */
import { placeOrderLoad, startOrdersService, type OrdersService } from '../lib/orders.js';
import { defineScenario } from '../lib/scenario.js';

/** Half are available: enough for far more orders than a full run places. */
export const ORDER_PETS = 400_000;

export default defineScenario<OrdersService>({
  name: 'placeOrder',
  label: 'POST /v1/store/orders (each on a fresh available pet)',
  order: 95,
  usesSqlite: false,
  target: { bounds: [{ metric: 'ratio', atLeast: 0.15 }] },
  setup: (ctx) => startOrdersService(ctx, 'sqlite', ORDER_PETS),
  load: placeOrderLoad,
  teardown: (s) => s.cleanup(),
});
