import type { ApiModule } from '../module.js';
import { photoErrors } from './errors.js';
import { photoRoutes } from './routes.js';
import { Photo } from './schemas.js';
import { photoSettings } from './settings.js';

export const photosModule: ApiModule = {
  name: 'photos',
  components: [Photo],
  routes: photoRoutes,
  errors: photoErrors.catalogue,
  settings: photoSettings,
};
