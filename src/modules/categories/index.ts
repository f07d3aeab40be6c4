import type { ApiModule } from '../module.js';
import { categoryRoutes } from './routes.js';
import { Category } from './schemas.js';

export const categoriesModule: ApiModule = {
  name: 'categories',
  tag: { name: 'categories', description: 'Extension: the categories pets belong to.' },
  components: [Category],
  routes: categoryRoutes,
};

// Its interface: what other modules, the app and the CLI use of it (they import no other file of it).
export { DEFAULT_CATEGORIES } from './repository.js';
