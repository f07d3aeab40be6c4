/** `accounts unban`. */
import { parseArgs } from 'node:util';
import type { Config } from '../config.js';
import { accountRepository } from '../modules/accounts/repository.js';
import { print, UsageError, withDatabase } from './common.js';

export async function accountsUnban(config: Config, args: string[]): Promise<void> {
  const { positionals } = parseArgs({ args, allowPositionals: true, options: {} });
  const name = positionals[0];
  if (!name || positionals.length > 1) throw new UsageError('accounts unban needs exactly one account NAME');
  await withDatabase(config, async (database) => {
    if (!(await database.repository(accountRepository).liftBan(name, Date.now())))
      throw new UsageError(`no account named ${name}`);
    print(`Lifted any ban on account "${name}".`);
  });
}
