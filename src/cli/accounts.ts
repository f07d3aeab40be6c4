/** `accounts unban`. */
import { accountRepository } from '../modules/accounts/index.js';
import { CommandFailed, parse, print, UsageError, withDatabase, type Command } from './common.js';

export const accountsUnban: Command = {
  help: `Usage: pet-adoption accounts unban NAME

Lifts a temporary ban on account NAME at once, on every instance (the rejected-request count restarts).`,
  async run(config, args) {
    const { positionals } = parse(args, {}, true);
    const name = positionals[0];
    if (!name || positionals.length > 1)
      throw new UsageError('accounts unban needs exactly one account NAME');
    await withDatabase(config, async (database) => {
      if (!(await database.repository(accountRepository).liftBan(name, Date.now())))
        throw new CommandFailed(`no account named ${name}`);
      print(`Lifted any ban on account "${name}".`);
    });
  },
};
