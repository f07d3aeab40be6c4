/** `seed --pets N`. */
import { petRepository } from '../modules/pets/repository.js';
import {
  noPositionals,
  parse,
  positiveInt,
  print,
  progress,
  UsageError,
  withDatabase,
  type Command,
} from './common.js';

export const seedCommand: Command = {
  help: `Usage: pet-adoption seed --pets N

Adds N demo pets (names, categories and statuses cycle) to the existing database. N is a positive whole
number; on a terminal, large counts show their progress on stderr.`,
  async run(config, args) {
    const { values, positionals } = parse(args, { pets: { type: 'string' } }, true);
    noPositionals(positionals, 'seed');
    const count = positiveInt(values.pets, '--pets');
    if (count === undefined) throw new UsageError('seed needs --pets N');
    await withDatabase(config, async (database) => {
      const shown = progress('Adding demo pets', count);
      try {
        await database.repository(petRepository).seed(count, Date.now(), (done) => shown.update(done));
      } finally {
        shown.end();
      }
      print(`Added ${count} demo pets.`);
    });
  },
};
