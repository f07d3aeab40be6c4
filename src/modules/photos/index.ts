import type { ApiModule } from '../module.js';
import { photoErrors } from './errors.js';
import { photoRoutes } from './routes.js';
import { Photo } from './schemas.js';

export const photosModule: ApiModule = {
  name: 'photos',
  components: [Photo],
  routes: photoRoutes,
  errors: photoErrors.catalogue,
};

// Its interface: what other modules, the app and the CLI use of it (they import no other file of it).
export { MAX_PHOTOS, Photo, renderPhoto, type PhotoRecord } from './schemas.js';
export { loadSharp, processPhoto } from './image.js';
export { photoRepository } from './repository.js';
