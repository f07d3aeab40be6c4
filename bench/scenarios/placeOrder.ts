/** placeOrder on SQLite, each request on a fresh available pet (order insert + pet update, one transaction). */
import { startOrdersService, type OrdersService } from '../lib/orders.js';
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
