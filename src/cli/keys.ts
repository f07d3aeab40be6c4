/** `keys create | list | revoke`. */
import type { Config } from '../config.js';
import { mintKey } from '../modules/accounts/index.js';
import { accountRepository } from '../modules/accounts/index.js';
import { PLANS, type Plan } from '../modules/accounts/index.js';
import { allScopes } from '../modules/accounts/index.js';
import {
  CommandFailed,
  noPositionals,
  parse,
  positiveInt,
  print,
  scopeList,
  shownScopes,
  UsageError,
  withDatabase,
  type Command,
} from './common.js';

export const keysCreate: Command = {
  help: `Usage: pet-adoption keys create --account NAME [--plan PLAN] [--per-minute N] [--per-day N]
                               [--expires ISO-8601] [--scopes SCOPE,…] [--json]

Creates an API key for account NAME (the account is created on first use) and prints the secret key
alone on the last line of stdout. The key is shown only this once.

  --account NAME      the account the key belongs to (1–100 characters)
  --plan PLAN         ${PLANS.join(', ')}; free for a new account; changes an existing account's plan
  --per-minute N      per-minute quota (enterprise plan only)
  --per-day N         per-day quota (enterprise plan only)
  --expires WHEN      when the key stops working, an ISO-8601 date/time in the future
                      (e.g. 2030-01-31 or 2030-01-31T12:00:00Z)
  --scopes LIST       what the key may do, comma-separated: ${allScopes().join(', ')};
                      without it the key has every scope
  --json              print one JSON object (key, id, account, plan, …) instead of text`,
  run: create,
};

export const keysList: Command = {
  help: `Usage: pet-adoption keys list [--account NAME] [--json]

Lists API keys (never their secrets): id, account, hint, creation time, state (active, expires …,
expired …, revoked …) and scopes.

  --account NAME      only this account's keys
  --json              print a JSON array; each key has a "state" of active, expired or revoked`,
  run: list,
};

export const keysRevoke: Command = {
  help: `Usage: pet-adoption keys revoke KEY_ID

Revokes the key with id KEY_ID (as keys list shows it); every instance refuses it from the next request.`,
  run: revoke,
};

async function create(config: Config, args: string[]): Promise<void> {
  const { values, positionals } = parse(
    args,
    {
      account: { type: 'string' },
      plan: { type: 'string' },
      'per-minute': { type: 'string' },
      'per-day': { type: 'string' },
      expires: { type: 'string' },
      scopes: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
    true,
  );
  noPositionals(positionals, 'keys create');
  const account = values.account?.trim();
  if (!account) throw new UsageError('keys create needs --account NAME');
  if (account.length > 100) throw new UsageError('--account must be at most 100 characters');
  const plan = values.plan as Plan | undefined;
  if (plan !== undefined && !PLANS.includes(plan))
    throw new UsageError(`--plan must be one of ${PLANS.join(', ')}`);
  const perMinute = positiveInt(values['per-minute'], '--per-minute');
  const perDay = positiveInt(values['per-day'], '--per-day');
  // Validated before the database is opened: a mistake creates nothing.
  const scopes = scopeList(values.scopes, '--scopes') ?? null;
  let expiresAt: number | null = null;
  if (values.expires !== undefined) {
    expiresAt = Date.parse(values.expires);
    if (Number.isNaN(expiresAt)) {
      throw new UsageError(`--expires must be an ISO-8601 date/time, got "${values.expires}"`);
    }
    // A key that is expired when made could never be used; most likely a typo in the year.
    if (expiresAt <= Date.now()) {
      throw new UsageError(
        `--expires ${values.expires} is in the past (now is ${new Date().toISOString()}); give a future date/time`,
      );
    }
  }
  await withDatabase(config, async (database) => {
    const accounts = database.repository(accountRepository);
    const existing = await accounts.findAccount(account);
    const effectivePlan = plan ?? existing?.plan ?? 'free';
    if ((perMinute !== undefined || perDay !== undefined) && effectivePlan !== 'enterprise') {
      throw new UsageError('--per-minute and --per-day are for --plan enterprise');
    }
    const now = Date.now();
    const saved = await accounts.upsertAccount({ name: account, plan, perMinute, perDay }, now);
    const { key, id } = await mintKey(accounts, saved.id, now, expiresAt, scopes);
    const info = {
      key,
      id,
      account: saved.name,
      plan: saved.plan,
      perMinute: saved.perMinute,
      perDay: saved.perDay,
      expiresAt: expiresAt === null ? null : new Date(expiresAt).toISOString(),
      scopes: shownScopes(scopes),
    };
    if (values.json) return void print(JSON.stringify(info));
    print(
      `Created key ${id} for account "${saved.name}" (plan ${saved.plan}: ${saved.perMinute}/minute, ${saved.perDay}/day).`,
    );
    if (info.expiresAt) print(`It expires at ${info.expiresAt}.`);
    print(
      scopes === null
        ? `It has every scope (${info.scopes.join(' ')}), and any added later.`
        : `Its scopes: ${info.scopes.join(' ')}.`,
    );
    print('The key is shown only this once; store it now:');
    print(key);
  });
}

async function list(config: Config, args: string[]): Promise<void> {
  const { values, positionals } = parse(
    args,
    { account: { type: 'string' }, json: { type: 'boolean', default: false } },
    true,
  );
  noPositionals(positionals, 'keys list');
  await withDatabase(config, async (database) => {
    const keys = await database.repository(accountRepository).listKeys(values.account);
    const now = Date.now();
    const iso = (t: number | null): string | null => (t === null ? null : new Date(t).toISOString());
    const rows = keys.map((k) => ({
      id: k.id,
      account: k.account,
      hint: k.hint,
      createdAt: iso(k.createdAt),
      expiresAt: iso(k.expiresAt),
      revokedAt: iso(k.revokedAt),
      state:
        k.revokedAt !== null ? 'revoked' : k.expiresAt !== null && k.expiresAt <= now ? 'expired' : 'active',
      scopes: shownScopes(k.scopes),
    }));
    if (values.json) return void print(JSON.stringify(rows));
    if (rows.length === 0) return void print('No keys.');
    for (const [i, r] of rows.entries()) {
      // A key given every scope also gets any scope added later, so it says so instead of listing today's.
      const scopes = keys[i]!.scopes === null ? 'all scopes' : `scopes ${r.scopes.join(',')}`;
      // The same test the API applies (expired once expiresAt <= now), so the list never calls a refused key active.
      const state =
        r.state === 'revoked'
          ? `revoked ${r.revokedAt}`
          : r.state === 'expired'
            ? `expired ${r.expiresAt}`
            : r.expiresAt
              ? `expires ${r.expiresAt}`
              : 'active';
      print(`${r.id}  ${r.account}  ${r.hint}  created ${r.createdAt}  ${state}  ${scopes}`);
    }
  });
}

async function revoke(config: Config, args: string[]): Promise<void> {
  const { positionals } = parse(args, {}, true);
  const id = positionals[0];
  if (!id || positionals.length > 1) throw new UsageError('keys revoke needs exactly one KEY_ID');
  await withDatabase(config, async (database) => {
    if (!(await database.repository(accountRepository).revokeKey(id, Date.now())))
      throw new CommandFailed(`no key with id ${id}`);
    print(`Revoked key ${id}.`);
  });
}
