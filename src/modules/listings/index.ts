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
    help:
      'each with a profile (breed, age, size, what it gets on with, a location around a German city) and, for ' +
      'a fifth of them (at most 100), two generated photos, so that a first search shows something',
    run: ({ database, count, now, onProgress }) =>
      seedCatalogue(database, count, { withPhotos: Math.min(100, Math.ceil(count / 5)), now, onProgress }),
  },
};

// Its interface: what other modules, the app and the CLI use of it (they import no other file of it).
export { listingRepository } from './repository.js';
