import type { ApiModule } from '../module.js';
import { listingRoutes } from './routes.js';
import { seedCatalogue } from './seed.js';
import { Listing } from './schemas.js';

export const listingsModule: ApiModule = {
  name: 'listings',
  components: [Listing],
  routes: listingRoutes,
  // A profile for every demo pet, two generated photos for a fifth of them (at most 100).
  seed: {
    label: 'Adding their profiles and photos',
    run: ({ database, count, now, onProgress }) =>
      seedCatalogue(database, count, { withPhotos: Math.min(100, Math.ceil(count / 5)), now, onProgress }),
  },
};
