/** listOrders?limit=20 on SQLite over a seeded set of orders (the caller holds orders:manage: every order). */
import { startOrdersService, type OrdersService } from '../lib/orders.js';
import { defineScenario } from '../lib/scenario.js';

const PETS = 20_000;
/** Placed through the API before measuring, by the bench account. */
const ORDERS = 2_000;

export default defineScenario<OrdersService>({
  name: 'listOrders',
  label: 'GET /v1/store/orders?limit=20',
  order: 96,
  usesSqlite: false,
  target: { bounds: [{ metric: 'ratio', atLeast: 0.3 }] },
  async setup(ctx) {
    const s = await startOrdersService(ctx, 'sqlite', PETS);
    try {
      for (let i = 0; i < ORDERS; i++) {
        const res = await fetch(`${s.server.origin}/v1/store/orders`, {
          method: 'POST',
          headers: { authorization: `Bearer ${s.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ petId: s.nextAvailablePet() }),
        });
        if (res.status !== 201) throw new Error(`seeding orders: ${res.status} ${await res.text()}`);
      }
      return s;
    } catch (error) {
      await s.cleanup();
      throw error;
    }
  },
  load: (s) => ({
    pid: s.server.child.pid!,
    url: `${s.server.origin}/v1/store/orders?limit=20`,
    headers: { authorization: `Bearer ${s.key}` },
  }),
  teardown: (s) => s.cleanup(),
});
