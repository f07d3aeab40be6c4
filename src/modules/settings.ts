/**
 * Every module's environment variables, in module order, for src/config.ts. Each module declares them in
 * its own settings.ts (pure data, importing nothing of the module's routes), so reading the configuration
 * loads no route file and nothing that imports the configuration's type back. src/modules/index.ts checks
 * at load that this list and the modules' `settings` are the same.
 */
import { settingsOf } from './declared.js';
import type { SettingDeclaration } from './module.js';
import { applicationSettings } from './applications/settings.js';
import { orderSettings } from './orders/settings.js';
import { photoSettings } from './photos/settings.js';
import { webhookSettings } from './webhooks/settings.js';

export const MODULE_SETTINGS: readonly SettingDeclaration[] = settingsOf([
  { settings: photoSettings },
  { settings: orderSettings },
  { settings: applicationSettings },
  { settings: webhookSettings },
]);
