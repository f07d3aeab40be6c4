/** `migrate`: apply pending migrations (serve does too, at start). */
import type { Config } from '../config.js';
import { print, withDatabase } from './common.js';

export async function migrate(config: Config): Promise<void> {
  await withDatabase(config, async () => undefined);
  print('Migrations applied.');
}
