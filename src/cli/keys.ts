/** `keys create | list | revoke`. */
import { parseArgs } from 'node:util';
import type { Config } from '../config.js';
import { mintKey } from '../modules/accounts/mint.js';
import { accountRepository, PLANS, type Plan } from '../modules/accounts/repository.js';
import { positiveInt, print, scopeList, shownScopes, UsageError, withDatabase } from './common.js';

export async function keysCreate(config: Config, args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      account: { type: 'string' },
      plan: { type: 'string' },
      'per-minute': { type: 'string' },
      'per-day': { type: 'string' },
      expires: { type: 'string' },
      scopes: { type: 'string' },
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
  // Validated before the database is opened: a mistake creates nothing.
  const scopes = scopeList(values.scopes, '--scopes') ?? null;
  let expiresAt: number | null = null;
  if (values.expires !== undefined) {
    expiresAt = Date.parse(values.expires);
    if (Number.isNaN(expiresAt)) throw new UsageError('--expires must be an ISO-8601 date/time');
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

export async function keysList(config: Config, args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: { account: { type: 'string' }, json: { type: 'boolean', default: false } },
  });
  await withDatabase(config, async (database) => {
    const keys = await database.repository(accountRepository).listKeys(values.account);
    const iso = (t: number | null): string | null => (t === null ? null : new Date(t).toISOString());
    const rows = keys.map((k) => ({
      id: k.id,
      account: k.account,
      hint: k.hint,
      createdAt: iso(k.createdAt),
      expiresAt: iso(k.expiresAt),
      revokedAt: iso(k.revokedAt),
      scopes: shownScopes(k.scopes),
    }));
    if (values.json) return void print(JSON.stringify(rows));
    if (rows.length === 0) return void print('No keys.');
    for (const [i, r] of rows.entries()) {
      // A key given every scope also gets any scope added later, so it says so instead of listing today's.
      const scopes = keys[i]!.scopes === null ? 'all scopes' : `scopes ${r.scopes.join(',')}`;
      const state = r.revokedAt
        ? `revoked ${r.revokedAt}`
        : r.expiresAt
          ? `expires ${r.expiresAt}`
          : 'active';
      print(`${r.id}  ${r.account}  ${r.hint}  created ${r.createdAt}  ${state}  ${scopes}`);
    }
  });
}

export async function keysRevoke(config: Config, args: string[]): Promise<void> {
  const { positionals } = parseArgs({ args, allowPositionals: true, options: {} });
  const id = positionals[0];
  if (!id || positionals.length > 1) throw new UsageError('keys revoke needs exactly one KEY_ID');
  await withDatabase(config, async (database) => {
    if (!(await database.repository(accountRepository).revokeKey(id, Date.now())))
      throw new UsageError(`no key with id ${id}`);
    print(`Revoked key ${id}.`);
  });
}
