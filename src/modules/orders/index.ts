import type { ApiModule } from '../module.js';
import { petHolds } from '../pets/index.js';
import { orderScopes } from './scopes.js';
import { orderErrors } from './errors.js';
import { orderSettings } from './settings.js';
import { orderRoutes } from './routes.js';
import { Order } from './schemas.js';
import { openOrderHold } from './within.js';

export const ordersModule: ApiModule = {
  name: 'orders',
  tag: {
    name: 'store',
    description: 'Adoption orders and the inventory (see docs/api.md, "Adoption workflow").',
  },
  components: [Order],
  scopes: orderScopes,
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

// Its interface: what other modules, the app and the CLI use of it (they import no other file of it). The
// applications module uses its error codes that other writes share, placing and cancelling inside their
// transaction, and the listeners of an order's moves.
export { orderRepository, type OrderRecord } from './repository.js';
export { ORDER_STATUSES, type OrderStatus } from './schemas.js';
export { renderOrder } from './decisions.js';
export { orderError } from './errors.js';
export { DEFAULT_MAX_OPEN_ORDERS } from './settings.js';
export { orderMoves, ordersWithin, type OrderMove } from './within.js';

// A pet with an open order keeps its status and its row: the pets' writes ask this hold, registered when this
// file is loaded (the module list loads it in every process), in their transaction.
petHolds.register(openOrderHold);
