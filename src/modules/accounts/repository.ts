import type { PoolClient } from 'pg';
import type { RepositoryFactory } from '../../db/database.js';
import { PostgresAccountRepository } from './repository.postgres.js';
import { SqliteAccountRepository } from './repository.sqlite.js';
import type { Scope } from './scopes.js';
import type { Plan } from './quota.js';

export interface Account {
  id: number;
  name: string;
  plan: Plan;
  perMinute: number;
  perDay: number;
  /** Epoch ms of the last `accounts unban`; bans that started before it are void. */
  banLiftedAt: number | null;
}

export interface ApiKeyInfo {
  id: string;
  account: string;
  hint: string;
  createdAt: number;
  expiresAt: number | null;
  revokedAt: number | null;
  /** The scopes the key was given; `null`: every scope. */
  scopes: Scope[] | null;
}

/** What authentication learns from a key hash in one lookup. */
export interface KeyPrincipal {
  keyId: string;
  expiresAt: number | null;
  revokedAt: number | null;
  /** What the key may do: its granted scopes with their implications (docs/api.md, "Scopes"). */
  scopes: ReadonlySet<Scope>;
  account: Account;
}

export interface AccountInput {
  name: string;
  /** Omitted: keep the existing plan, or `free` for a new account. */
  plan?: Plan;
  perMinute?: number;
  perDay?: number;
}

export interface NewKeyRecord {
  id: string;
  hash: string;
  hint: string;
  expiresAt: number | null;
  /** `null` or omitted: every scope. */
  scopes?: readonly Scope[] | null;
}

/**
 * Accounts, their API keys and bans; implemented once per backend and held to this contract by
 * test/contracts/accounts.contract.test.ts:
 *
 * - `upsertAccount` creates the account (plan `free` unless given) or updates its plan/quotas; concurrent
 *   upserts of one new account create it once; an enterprise account keeps its custom quotas unless new
 *   ones are given.
 * - `findKeyByHash` sees every committed change (revocation, plan change, lifted ban) on the next call,
 *   whichever process made it; it may batch and cache as long as that holds.
 * - `revokeKey` keeps the first revocation time; it and `liftBan` answer false for unknown names.
 * - Timestamps are epoch milliseconds supplied by the caller's clock.
 */
export interface AccountRepository {
  upsertAccount(input: AccountInput, now: number): Promise<Account>;
  findAccount(name: string): Promise<Account | undefined>;
  countAccounts(): Promise<number>;
  createKey(accountId: number, key: NewKeyRecord, now: number): Promise<void>;
  listKeys(accountName?: string): Promise<ApiKeyInfo[]>;
  /** Returns false when no such key exists. */
  revokeKey(keyId: string, now: number): Promise<boolean>;
  findKeyByHash(hash: string): Promise<KeyPrincipal | undefined>;
  /** Record that bans of this account started before `now` are lifted. Returns false for an unknown account. */
  liftBan(accountName: string, now: number): Promise<boolean>;
}

/**
 * What each account's active keys (not revoked, not expired at `now`) may use together, by account id; an
 * account without one gets the empty set.
 */
export type LiveScopes = Map<number, ReadonlySet<Scope>>;

/**
 * How another module reads accounts' keys on SQLite: synchronously on the one connection, so inside the
 * caller's transaction when it is in one.
 */
export interface SqliteLiveKeys {
  liveScopes(accountIds: readonly number[], now: number): LiveScopes;
}

/**
 * The same on PostgreSQL: on `client`, the connection of the caller's transaction (its snapshot), or, with
 * `undefined`, on a pooled connection of its own. `lockAccount` locks the account's row until the caller's
 * transaction ends, so one account's writes of another module can queue on it (webhook endpoint creation).
 */
export interface PostgresLiveKeys {
  liveScopes(client: PoolClient | undefined, accountIds: readonly number[], now: number): Promise<LiveScopes>;
  lockAccount(client: PoolClient, accountId: number): Promise<void>;
}

export const accountRepository: RepositoryFactory<
  AccountRepository & SqliteLiveKeys,
  AccountRepository & PostgresLiveKeys
> = {
  sqlite: (db) => new SqliteAccountRepository(db),
  postgres: (db) => new PostgresAccountRepository(db),
};
