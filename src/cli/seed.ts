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

/** Words of `text` in lines of at most `width` characters. */
function wrap(text: string, width = 105): string {
  const lines: string[] = [];
  for (const word of text.split(' ')) {
    const last = lines.at(-1);
    if (last !== undefined && last.length + 1 + word.length <= width)
      lines[lines.length - 1] = `${last} ${word}`;
    else lines.push(word);
  }
  return lines.join('\n');
}

/** Each module's share of the seed (ApiModule.seed), in module order: the pets first. */
const STEPS = MODULES.flatMap((module) => (module.seed ? [module.seed] : []));

export const seedCommand: Command = {
  help: `Usage: pet-adoption seed --pets N

${wrap(
  `Adds ${STEPS.map((step) => step.help).join(', ')}. N is a positive whole number; on a terminal, large ` +
    'counts show their progress on stderr.',
)}`,
  async run(config, args) {
    const { values, positionals } = parse(args, { pets: { type: 'string' } }, true);
    noPositionals(positionals, 'seed');
    const count = positiveInt(values.pets, '--pets');
    if (count === undefined) throw new UsageError('seed needs --pets N');
    await withDatabase(config, async (database) => {
      for (const seed of STEPS) {
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
