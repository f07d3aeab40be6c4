#!/usr/bin/env node
/**
 * `pet-adoption`: the service's command line. Same environment as the server. Results go to stdout
 * (a new key alone on the last line), errors to stderr with a non-zero exit code.
 */
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, type Config } from './config.js';
import { generateApiKey, generateKeyId, hashApiKey, keyHint } from './keys.js';
import { createStorage } from './storage/index.js';
import { PLANS, StorageUnavailableError, type Plan, type Storage } from './storage/storage.js';

const USAGE = `Usage: pet-adoption <command>

  serve                                   run the HTTP service (what npm start runs)
  migrate                                 apply database migrations
  seed --pets N                           add N demo pets
  keys create --account NAME [--plan free|pro|business|enterprise]
              [--per-minute N] [--per-day N] [--expires ISO-8601] [--json]
                                          create a key (and the account on first use)
  keys list [--account NAME] [--json]     list keys (never their secrets)
  keys revoke KEY_ID                      revoke a key; effective on the next request
  accounts unban NAME                     lift a temporary ban at once

Configuration comes from the environment: DATABASE_URL, REDIS_URL, PORT, HOST, LOG_LEVEL, … (see README).`;

class UsageError extends Error {}

function positiveInt(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[1-9][0-9]{0,12}$/.test(value)) throw new UsageError(`${flag} must be a positive whole number`);
  return Number(value);
}

async function withStorage<T>(config: Config, fn: (storage: Storage) => Promise<T>): Promise<T> {
  const storage = await createStorage(config);
  try {
    await storage.migrate();
    return await fn(storage);
  } finally {
    await storage.close();
  }
}

const print = (line: string): boolean => process.stdout.write(`${line}\n`);

async function keysCreate(config: Config, args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      account: { type: 'string' },
      plan: { type: 'string' },
      'per-minute': { type: 'string' },
      'per-day': { type: 'string' },
      expires: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
  });
  const account = values.account?.trim();
  if (!account) throw new UsageError('keys create needs --account NAME');
  if (account.length > 100) throw new UsageError('--account must be at most 100 characters');
  const plan = values.plan as Plan | undefined;
  if (plan !== undefined && !PLANS.includes(plan))
    throw new UsageError(`--plan must be one of ${PLANS.join(', ')}`);
  const perMinute = positiveInt(values['per-minute'], '--per-minute');
  const perDay = positiveInt(values['per-day'], '--per-day');
  let expiresAt: number | null = null;
  if (values.expires !== undefined) {
    expiresAt = Date.parse(values.expires);
    if (Number.isNaN(expiresAt)) throw new UsageError('--expires must be an ISO-8601 date/time');
  }
  await withStorage(config, async (storage) => {
    const existing = await storage.findAccount(account);
    const effectivePlan = plan ?? existing?.plan ?? 'free';
    if ((perMinute !== undefined || perDay !== undefined) && effectivePlan !== 'enterprise') {
      throw new UsageError('--per-minute and --per-day are for --plan enterprise');
    }
    const now = Date.now();
    const saved = await storage.upsertAccount({ name: account, plan, perMinute, perDay }, now);
    const key = generateApiKey();
    const id = generateKeyId();
    await storage.createKey(saved.id, { id, hash: hashApiKey(key), hint: keyHint(key), expiresAt }, now);
    const info = {
      key,
      id,
      account: saved.name,
      plan: saved.plan,
      perMinute: saved.perMinute,
      perDay: saved.perDay,
      expiresAt: expiresAt === null ? null : new Date(expiresAt).toISOString(),
    };
    if (values.json) return void print(JSON.stringify(info));
    print(
      `Created key ${id} for account "${saved.name}" (plan ${saved.plan}: ${saved.perMinute}/minute, ${saved.perDay}/day).`,
    );
    if (info.expiresAt) print(`It expires at ${info.expiresAt}.`);
    print('The key is shown only this once; store it now:');
    print(key);
  });
}

async function keysList(config: Config, args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: { account: { type: 'string' }, json: { type: 'boolean', default: false } },
  });
  await withStorage(config, async (storage) => {
    const keys = await storage.listKeys(values.account);
    const iso = (t: number | null): string | null => (t === null ? null : new Date(t).toISOString());
    const rows = keys.map((k) => ({
      id: k.id,
      account: k.account,
      hint: k.hint,
      createdAt: iso(k.createdAt),
      expiresAt: iso(k.expiresAt),
      revokedAt: iso(k.revokedAt),
    }));
    if (values.json) return void print(JSON.stringify(rows));
    if (rows.length === 0) return void print('No keys.');
    for (const r of rows) {
      const state = r.revokedAt
        ? `revoked ${r.revokedAt}`
        : r.expiresAt
          ? `expires ${r.expiresAt}`
          : 'active';
      print(`${r.id}  ${r.account}  ${r.hint}  created ${r.createdAt}  ${state}`);
    }
  });
}

async function keysRevoke(config: Config, args: string[]): Promise<void> {
  const { positionals } = parseArgs({ args, allowPositionals: true, options: {} });
  const id = positionals[0];
  if (!id || positionals.length > 1) throw new UsageError('keys revoke needs exactly one KEY_ID');
  await withStorage(config, async (storage) => {
    if (!(await storage.revokeKey(id, Date.now()))) throw new UsageError(`no key with id ${id}`);
    print(`Revoked key ${id}.`);
  });
}

async function accountsUnban(config: Config, args: string[]): Promise<void> {
  const { positionals } = parseArgs({ args, allowPositionals: true, options: {} });
  const name = positionals[0];
  if (!name || positionals.length > 1) throw new UsageError('accounts unban needs exactly one account NAME');
  await withStorage(config, async (storage) => {
    if (!(await storage.liftBan(name, Date.now()))) throw new UsageError(`no account named ${name}`);
    print(`Lifted any ban on account "${name}".`);
  });
}

async function seed(config: Config, args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { pets: { type: 'string' } } });
  const count = positiveInt(values.pets, '--pets');
  if (count === undefined) throw new UsageError('seed needs --pets N');
  await withStorage(config, async (storage) => {
    await storage.seedPets(count, Date.now());
    print(`Added ${count} demo pets.`);
  });
}

/** StorageUnavailableError's own message says only "storage unavailable"; the cause says why. */
function describeError(error: unknown): string {
  if (error instanceof StorageUnavailableError) return `database unavailable: ${causeText(error.cause)}`;
  return error instanceof Error ? error.message : String(error);
}

function causeText(cause: unknown): string {
  // Node's happy-eyeballs connect reports every address it tried in an AggregateError with no message.
  if (cause instanceof AggregateError && cause.errors.length > 0) {
    return cause.errors.map(causeText).join('; ');
  }
  if (cause instanceof Error) return cause.message || cause.name;
  return String(cause);
}

export async function main(argv: string[]): Promise<number> {
  const [command, sub, ...rest] = argv;
  try {
    if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
      print(USAGE);
      return command === undefined ? 1 : 0;
    }
    const config = loadConfig();
    switch (command) {
      case 'serve': {
        const { serve } = await import('./server.js');
        await serve(config);
        return 0;
      }
      case 'migrate':
        await withStorage(config, async () => undefined);
        print('Migrations applied.');
        return 0;
      case 'seed':
        await seed(
          config,
          [sub, ...rest].filter((a): a is string => a !== undefined),
        );
        return 0;
      case 'keys':
        if (sub === 'create') await keysCreate(config, rest);
        else if (sub === 'list') await keysList(config, rest);
        else if (sub === 'revoke') await keysRevoke(config, rest);
        else throw new UsageError('keys takes create, list or revoke');
        return 0;
      case 'accounts':
        if (sub === 'unban') await accountsUnban(config, rest);
        else throw new UsageError('accounts takes unban');
        return 0;
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`pet-adoption: invalid configuration: ${error.message}\n`);
      return 2;
    }
    if (error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`pet-adoption: ${(error as Error).message}\n\n${USAGE}\n`);
      return 2;
    }
    process.stderr.write(`pet-adoption: ${describeError(error)}\n`);
    return 1;
  }
}

const exitCode = await main(process.argv.slice(2));
// On success `serve` keeps running and the other commands end by themselves; a failure may leave pools open.
if (exitCode !== 0) process.exit(exitCode);
