import type { ApiModule } from '../module.js';
import { orderRoutes } from './routes.js';
import { Order } from './schemas.js';

export const ordersModule: ApiModule = {
  name: 'orders',
  tag: {
    name: 'store',
    description: 'Adoption orders and the inventory (see the README, "Adoption workflow").',
  },
  components: [Order],
  routes: orderRoutes,
};
