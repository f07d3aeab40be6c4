import { applicationsModule } from './applications/index.js';
import { categoriesModule } from './categories/index.js';
import { eventsModule } from './events/index.js';
import { listingsModule } from './listings/index.js';
import { settingsOf } from './declared.js';
import type { ApiModule } from './module.js';
import { ordersModule } from './orders/index.js';
import { petsModule } from './pets/index.js';
import { photosModule } from './photos/index.js';
import { profilesModule } from './profiles/index.js';
import { MODULE_SCOPES } from './scopes.js';
import { MODULE_SETTINGS } from './settings.js';
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

/**
 * The configuration and the scope vocabulary read the modules' declaration files, not this list (so they load
 * no routes): a module whose settings or scopes are missing there is refused when the list loads.
 */
function sameNames(
  what: string,
  listed: readonly { name: string }[],
  declared: readonly { name: string }[],
): void {
  const names = (items: readonly { name: string }[]) => items.map((item) => item.name).join(',');
  if (names(listed) !== names(declared)) {
    throw new Error(
      `${what}: src/modules/${what}.ts lists [${names(listed)}], the modules declare [${names(declared)}]`,
    );
  }
}
sameNames('settings', MODULE_SETTINGS, settingsOf(MODULES));
sameNames(
  'scopes',
  MODULE_SCOPES,
  MODULES.flatMap((module) => module.scopes ?? []),
);
