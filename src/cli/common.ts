/** What every command shares: usage errors, argument parsing, output, and a migrated database. */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { openDatabase } from '../db/index.js';
import { effectiveScopes, isScope, allScopes, type Scope } from '../modules/accounts/index.js';

/** A mistake in the command line: printed with the command's usage, exit code 2. */
export class UsageError extends Error {}

/** A refusal that is not a usage mistake (unknown order, no database, final status): stderr, exit 1. */
export class CommandFailed extends Error {}

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * node:util parseArgs, strict (an unknown option or a stray argument is a usage error naming it), with one
 * change: `--pets -1` reads -1 as the value of --pets. parseArgs would call it an ambiguous option, and the
 * user would never hear that the real problem is the number.
 */
export function parse<O extends Options>(args: string[], options: O, allowPositionals = false) {
  const joined: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const name = /^--([^=]+)$/.exec(arg)?.[1];
    const next = args[i + 1];
    if (name !== undefined && options[name]?.type === 'string' && next !== undefined && /^-\d/.test(next)) {
      joined.push(`${arg}=${next}`);
      i++;
    } else joined.push(arg);
  }
  return parseArgs({ args: joined, options, allowPositionals, strict: true });
}

/** Refuses arguments a command does not take, naming the first. */
export function noPositionals(positionals: string[], command: string): void {
  if (positionals.length > 0) throw new UsageError(`${command} takes no argument "${positionals[0]}"`);
}

export function positiveInt(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[1-9][0-9]{0,12}$/.test(value)) {
    throw new UsageError(`${flag} must be a positive whole number, got "${value}"`);
  }
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
    throw new UsageError(`${flag} needs at least one scope: ${allScopes().join(', ')}`);
  }
  const unknown = names.filter((name) => !isScope(name));
  if (unknown.length > 0) {
    const quoted = unknown.map((name) => `"${name}"`).join(', ');
    throw new UsageError(
      `${flag}: unknown scope${unknown.length > 1 ? 's' : ''} ${quoted}; valid scopes: ${allScopes().join(', ')}`,
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
  return allScopes().filter((scope) => effective.has(scope));
}

const FIRST =
  'run "pet-adoption migrate" (or start the server) first, or set DATABASE_URL to the server\'s database';

/**
 * Commands other than serve and migrate work on the server's database and never create one: a key made in a
 * new file next to the wrong working directory would be unknown to the running server.
 */
async function openExisting(config: Config): Promise<Database> {
  if (config.databaseUrl.startsWith('sqlite:')) {
    const path = config.databaseUrl.slice('sqlite:'.length);
    if (path !== ':memory:' && !existsSync(path)) {
      throw new CommandFailed(`no database exists at ${resolve(path)}; ${FIRST}`);
    }
    return openDatabase(config);
  }
  const database = await openDatabase(config);
  const { PostgresDatabase } = await import('../db/postgres.js');
  if (database instanceof PostgresDatabase && !(await database.isMigrated())) {
    await database.close();
    throw new CommandFailed(`no database exists at ${redactUrl(config.databaseUrl)} (no tables); ${FIRST}`);
  }
  return database;
}

/** The URL without its password, fit for a message. */
function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return url;
  }
}

/**
 * Opens the database, applies any pending migrations, runs fn, closes it. Unless `create` (migrate), the
 * database must exist already.
 */
export async function withDatabase<T>(
  config: Config,
  fn: (database: Database) => Promise<T>,
  { create = false }: { create?: boolean } = {},
): Promise<T> {
  const database = create ? await openDatabase(config) : await openExisting(config);
  try {
    await database.migrate();
    return await fn(database);
  } finally {
    await database.close();
  }
}

export const print = (line: string): boolean => process.stdout.write(`${line}\n`);

/**
 * Progress of long work on a terminal: one line on stderr rewritten in place. Nothing when stderr is not a
 * terminal (a pipe, a log file, a test), so scripts see only the result.
 */
export function progress(label: string, total: number, stream: NodeJS.WriteStream = process.stderr) {
  const tty = stream.isTTY === true;
  return {
    update(done: number): void {
      if (!tty) return;
      const percent = total === 0 ? 100 : Math.floor((done / total) * 100);
      stream.write(`\r${label}: ${done.toLocaleString('en')}/${total.toLocaleString('en')} (${percent}%)`);
    },
    end(): void {
      if (tty) stream.write('\n');
    },
  };
}

/** One command (or subcommand): its help text and what it does once the configuration is loaded. */
export interface Command {
  /** Full help: `Usage: …` and what every option means; printed for --help and with usage errors. */
  help: string;
  run(config: Config, args: string[]): Promise<void>;
}
