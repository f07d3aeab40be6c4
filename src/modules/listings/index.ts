import type { ApiModule } from '../module.js';
import { listingRoutes } from './routes.js';
import { Listing } from './schemas.js';

export const listingsModule: ApiModule = {
  name: 'listings',
  components: [Listing],
  routes: listingRoutes,
};
