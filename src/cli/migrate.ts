/** `migrate`: apply pending migrations (serve does too, at start). */
import { noPositionals, parse, print, withDatabase, type Command } from './common.js';

export const migrateCommand: Command = {
  help: `Usage: pet-adoption migrate

Creates the database named by DATABASE_URL if it does not exist, and applies pending migrations
(serve does the same at start). Safe to run while servers are running, and more than once.`,
  async run(config, args) {
    noPositionals(parse(args, {}, true).positionals, 'migrate');
    await withDatabase(config, async () => undefined, { create: true });
    print('Migrations applied.');
  },
};
