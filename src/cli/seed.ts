/** `seed --pets N`. */
import { MODULES } from '../modules/index.js';
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
      // Each module's share (ApiModule.seed), in module order: the pets first, then what others add to them.
      for (const { seed } of MODULES) {
        if (!seed) continue;
        const shown = progress(seed.label, count);
        try {
          await seed.run({ database, count, now: Date.now(), onProgress: (done) => shown.update(done) });
        } finally {
          shown.end();
        }
      }
      print(`Added ${count} demo pets.`);
    });
  },
};
