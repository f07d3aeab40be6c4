/** `seed --pets N`. */
import { parseArgs } from 'node:util';
import type { Config } from '../config.js';
import { petRepository } from '../modules/pets/repository.js';
import { positiveInt, print, UsageError, withDatabase } from './common.js';

export async function seed(config: Config, args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { pets: { type: 'string' } } });
  const count = positiveInt(values.pets, '--pets');
  if (count === undefined) throw new UsageError('seed needs --pets N');
  await withDatabase(config, async (database) => {
    await database.repository(petRepository).seed(count, Date.now());
    print(`Added ${count} demo pets.`);
  });
}
