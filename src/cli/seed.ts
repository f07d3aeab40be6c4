/** `seed --pets N`. */
import { seedCatalogue } from '../modules/listings/seed.js';
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

Adds N demo pets (names, categories and statuses cycle) to the existing database, each with a profile
(breed, age, size, what it gets on with, a location around a German city) and, for a fifth of them (at
most 100), two generated photos, so that a first search shows something. N is a positive whole number; on
a terminal, large counts show their progress on stderr.`,
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
      const now = Date.now();
      const catalogue = progress('Adding their profiles and photos', count);
      try {
        await seedCatalogue(database, count, {
          withPhotos: Math.min(100, Math.ceil(count / 5)),
          now,
          onProgress: (done) => catalogue.update(done),
        });
      } finally {
        catalogue.end();
      }
      print(`Added ${count} demo pets.`);
    });
  },
};
