import type { ApiModule } from '../module.js';
import { Photo } from '../photos/schemas.js';
import { listingRoutes } from './routes.js';
import { Listing } from './schemas.js';

export const listingsModule: ApiModule = {
  name: 'listings',
  // Photo is the photos module's; listed here too until that module registers it (registered once either way).
  components: [Listing, Photo],
  routes: listingRoutes,
};
