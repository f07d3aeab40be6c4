import type { ApiModule } from '../module.js';
import { orderErrors } from './errors.js';
import { orderSettings } from './settings.js';
import { orderRoutes } from './routes.js';
import { Order } from './schemas.js';

export const ordersModule: ApiModule = {
  name: 'orders',
  tag: {
    name: 'store',
    description: 'Adoption orders and the inventory (see docs/api.md, "Adoption workflow").',
  },
  components: [Order],
  scopes: [
    { name: 'orders:read', description: "read the account's own orders" },
    {
      name: 'orders:write',
      description: "place orders and cancel the account's own orders",
      implies: ['orders:read'],
    },
    {
      name: 'orders:manage',
      description: "every account's orders: list, read, approve, deliver and cancel them",
      implies: ['orders:read', 'orders:write'],
    },
  ],
  routes: orderRoutes,
  errors: orderErrors.catalogue,
  settings: orderSettings,
  events: [
    { type: 'order.placed', object: Order, describe: 'an Order' },
    { type: 'order.approved', object: Order },
    { type: 'order.delivered', object: Order },
    { type: 'order.cancelled', object: Order },
  ],
};

declare module '../module.js' {
  interface EventTypes {
    'order.placed': true;
    'order.approved': true;
    'order.delivered': true;
    'order.cancelled': true;
  }
}

// The orders module's interface for other modules (applications): its error codes that other writes share,
// placing and cancelling inside their transaction, and the listeners of an order's moves.
export { orderError } from './errors.js';
export { DEFAULT_MAX_OPEN_ORDERS } from './settings.js';
export { orderMoves, ordersWithin, type OrderMove } from './within.js';
