/** What every command shares: usage errors, argument checks, output, and a migrated database. */
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { openDatabase } from '../db/index.js';
import { effectiveScopes, isScope, SCOPES, type Scope } from '../modules/accounts/scopes.js';

/** A mistake in the command line: printed with the usage text, exit code 2. */
export class UsageError extends Error {}

export function positiveInt(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[1-9][0-9]{0,12}$/.test(value)) throw new UsageError(`${flag} must be a positive whole number`);
  return Number(value);
}

/**
 * `--scopes a,b` (commas, spaces allowed around names): every name must be in the vocabulary; an unknown
 * one is named with the valid ones, and an empty list is refused (a key that may do nothing is a mistake).
 */
export function scopeList(value: string | undefined, flag: string): Scope[] | undefined {
  if (value === undefined) return undefined;
  const names = value.split(/[\s,]+/).filter((name) => name !== '');
  if (names.length === 0) {
    throw new UsageError(`${flag} needs at least one scope: ${SCOPES.join(', ')}`);
  }
  const unknown = names.filter((name) => !isScope(name));
  if (unknown.length > 0) {
    const quoted = unknown.map((name) => `"${name}"`).join(', ');
    throw new UsageError(
      `${flag}: unknown scope${unknown.length > 1 ? 's' : ''} ${quoted}; valid scopes: ${SCOPES.join(', ')}`,
    );
  }
  return [...new Set(names as Scope[])];
}

/**
 * What a key may do, as shown to operators: its granted scopes with their implications, in vocabulary
 * order; a key given every scope (`null`, the default) lists the whole vocabulary.
 */
export function shownScopes(granted: readonly Scope[] | null): Scope[] {
  const effective = effectiveScopes(granted);
  return SCOPES.filter((scope) => effective.has(scope));
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
