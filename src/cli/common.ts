/** What every command shares: usage errors, argument checks, output, and a migrated database. */
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { openDatabase } from '../db/index.js';

/** A mistake in the command line: printed with the usage text, exit code 2. */
export class UsageError extends Error {}

export function positiveInt(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[1-9][0-9]{0,12}$/.test(value)) throw new UsageError(`${flag} must be a positive whole number`);
  return Number(value);
}

/** Opens and migrates the database, runs fn, closes it. */
export async function withDatabase<T>(config: Config, fn: (database: Database) => Promise<T>): Promise<T> {
  const database = await openDatabase(config);
  try {
    await database.migrate();
    return await fn(database);
  } finally {
    await database.close();
  }
}

export const print = (line: string): boolean => process.stdout.write(`${line}\n`);
