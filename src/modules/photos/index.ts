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

// Its interface: what other modules, the app and the CLI use of it (they import no other file of it).
export { MAX_PHOTOS, Photo, renderPhoto, renderStoredPhoto, type PhotoRecord } from './schemas.js';
export { loadSharp, processPhoto, processUpload } from './image.js';
export { photoRepository } from './repository.js';
