import { applicationsModule } from './applications/index.js';
import { categoriesModule } from './categories/index.js';
import { eventsModule } from './events/index.js';
import { listingsModule } from './listings/index.js';
import type { ApiModule } from './module.js';
import { ordersModule } from './orders/index.js';
import { petsModule } from './pets/index.js';
import { photosModule } from './photos/index.js';
import { profilesModule } from './profiles/index.js';
import { webhooksModule } from './webhooks/index.js';

/** Every resource module, in the order their routes and tags appear in the OpenAPI document. */
export const MODULES: ApiModule[] = [
  petsModule,
  profilesModule,
  photosModule,
  listingsModule,
  categoriesModule,
  ordersModule,
  applicationsModule,
  eventsModule,
  webhooksModule,
];
