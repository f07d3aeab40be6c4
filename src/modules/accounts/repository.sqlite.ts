import { runAsPromise, translateSqliteError, type SqliteDatabase } from '../../db/sqlite.js';
import { settle, TurnBatch } from '../../db/turn-batch.js';
import type {
  Account,
  AccountInput,
  AccountRepository,
  ApiKeyInfo,
  KeyPrincipal,
  LiveScopes,
  NewKeyRecord,
  SqliteLiveKeys,
} from './repository.js';
import { quotaFor } from './quota.js';
import { effectiveScopes, formatScopes, parseScopes, scopesByAccount } from './scopes.js';

/**
 * Keys remembered by findKeyByHash; beyond this the oldest is forgotten (bounds memory under key churn). A
 * remembered key costs a few hundred bytes, so the full cache stays in the tens of megabytes: room for the active keys of a large
 * deployment, whose requests then pay no key query (a cyclic rotation through more keys than fit misses
 * every time).
 */
const KEY_CACHE_SIZE = 50_000;

// Rows are selected with column aliases that make them the domain shapes as they are.
const ACCOUNT_COLUMNS =
  'a.id, a.name, a.plan, a.per_minute AS perMinute, a.per_day AS perDay, a.ban_lifted_at AS banLiftedAt';

export class SqliteAccountRepository implements AccountRepository, SqliteLiveKeys {
  private readonly database: SqliteDatabase;
  private readonly stmt;
  /** Key lookups of one event-loop turn; see findKeyByHash. */
  private readonly lookups: TurnBatch<string, KeyPrincipal | undefined>;
  private readonly keyCache = new Map<string, KeyPrincipal>();
  private keyCacheVersion = -1;

  constructor(database: SqliteDatabase) {
    this.database = database;
    const { db } = database;
    this.stmt = {
      findAccount: db.prepare<[string], Account>(
        `SELECT ${ACCOUNT_COLUMNS} FROM accounts a WHERE a.name = ?`,
      ),
      insertAccount: db.prepare<[string, string, number, number, number], Account>(
        `INSERT INTO accounts (name, plan, per_minute, per_day, created_at) VALUES (?, ?, ?, ?, ?)
         RETURNING id, name, plan, per_minute AS perMinute, per_day AS perDay, ban_lifted_at AS banLiftedAt`,
      ),
      updateAccount: db.prepare<[string, number, number, number]>(
        'UPDATE accounts SET plan = ?, per_minute = ?, per_day = ? WHERE id = ?',
      ),
      countAccounts: db.prepare<[], { n: number }>('SELECT count(*) AS n FROM accounts'),
      insertKey: db.prepare<[string, number, string, string, number, number | null, string | null]>(
        `INSERT INTO api_keys (id, account_id, hash, hint, created_at, expires_at, scopes)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
      ),
      listKeys: db.prepare<
        [string | null, string | null],
        Omit<ApiKeyInfo, 'scopes'> & { scopes: string | null }
      >(
        `SELECT k.id, a.name AS account, k.hint, k.created_at AS createdAt, k.expires_at AS expiresAt,
                k.revoked_at AS revokedAt, k.scopes
         FROM api_keys k JOIN accounts a ON a.id = k.account_id
         WHERE ? IS NULL OR a.name = ? ORDER BY k.created_at, k.id`,
      ),
      revokeKey: db.prepare<[number, string]>(
        'UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?',
      ),
      findKey: db.prepare<
        [string],
        Account & { keyId: string; expiresAt: number | null; revokedAt: number | null; scopes: string | null }
      >(
        `SELECT k.id AS keyId, k.expires_at AS expiresAt, k.revoked_at AS revokedAt, k.scopes,
                ${ACCOUNT_COLUMNS}
         FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.hash = ?`,
      ),
      liftBan: db.prepare<[number, string]>('UPDATE accounts SET ban_lifted_at = ? WHERE name = ?'),
      liveKeys: db.prepare<[string, number], { accountId: number; scopes: string | null }>(
        `SELECT account_id AS accountId, scopes FROM api_keys
         WHERE account_id IN (SELECT value FROM json_each(?)) AND revoked_at IS NULL
           AND (expires_at IS NULL OR expires_at > ?)`,
      ),
    };
    this.lookups = new TurnBatch((hashes) => {
      // Also the page cache's version for the requests of this turn (SqliteDatabase.readVersion).
      const version = this.database.observeReadVersion();
      if (version !== this.keyCacheVersion) {
        this.keyCache.clear();
        this.keyCacheVersion = version;
      }
      return hashes.map((hash) => settle(() => this.lookUpKey(hash)));
    }, translateSqliteError);
  }

  upsertAccount(input: AccountInput, now: number): Promise<Account> {
    this.keyCache.clear();
    return this.database.write(() =>
      this.database.db
        .transaction(() => {
          const existing = this.stmt.findAccount.get(input.name);
          const plan = input.plan ?? existing?.plan ?? 'free';
          const quota = quotaFor(
            plan,
            input.perMinute ?? (existing?.plan === 'enterprise' ? existing.perMinute : undefined),
            input.perDay ?? (existing?.plan === 'enterprise' ? existing.perDay : undefined),
          );
          if (!existing)
            return this.stmt.insertAccount.get(input.name, plan, quota.perMinute, quota.perDay, now)!;
          this.stmt.updateAccount.run(plan, quota.perMinute, quota.perDay, existing.id);
          return { ...existing, plan, ...quota };
        })
        .immediate(),
    );
  }

  findAccount(name: string): Promise<Account | undefined> {
    return runAsPromise(() => this.stmt.findAccount.get(name));
  }

  countAccounts(): Promise<number> {
    return runAsPromise(() => this.stmt.countAccounts.get()!.n);
  }

  createKey(accountId: number, key: NewKeyRecord, now: number): Promise<void> {
    this.keyCache.clear();
    return this.database.write(() => {
      this.stmt.insertKey.run(
        key.id,
        accountId,
        key.hash,
        key.hint,
        now,
        key.expiresAt,
        formatScopes(key.scopes ?? null),
      );
    });
  }

  listKeys(accountName?: string): Promise<ApiKeyInfo[]> {
    return runAsPromise(() =>
      this.stmt.listKeys
        .all(accountName ?? null, accountName ?? null)
        .map((row) => ({ ...row, scopes: parseScopes(row.scopes) })),
    );
  }

  revokeKey(keyId: string, now: number): Promise<boolean> {
    this.keyCache.clear();
    return this.database.write(() => this.stmt.revokeKey.run(now, keyId).changes > 0);
  }

  /**
   * Every request looks its key up, so found keys are remembered. The cache is exact, not a TTL: it is
   * dropped whenever the database changes under this connection (`PRAGMA data_version` moves when any other
   * connection or process commits: a CLI revoke, unban or plan change), and by this connection's own
   * key and account writes. The lookups of one event-loop turn are answered together (TurnBatch), after
   * one `data_version` check made once every one of those requests had arrived, so revocation and expiry
   * still take effect on the next request.
   */
  findKeyByHash(hash: string): Promise<KeyPrincipal | undefined> {
    return this.lookups.add(hash);
  }

  private lookUpKey(hash: string): KeyPrincipal | undefined {
    const cached = this.keyCache.get(hash);
    if (cached) return cached;
    const row = this.stmt.findKey.get(hash);
    if (!row) return undefined;
    const { keyId, expiresAt, revokedAt, scopes, ...account } = row;
    const principal: KeyPrincipal = Object.freeze({
      keyId,
      expiresAt,
      revokedAt,
      scopes: effectiveScopes(parseScopes(scopes)),
      account: Object.freeze(account),
    });
    if (this.keyCache.size >= KEY_CACHE_SIZE) this.keyCache.delete(this.keyCache.keys().next().value!);
    this.keyCache.set(hash, principal);
    return principal;
  }

  liveScopes(accountIds: readonly number[], now: number): LiveScopes {
    return scopesByAccount(accountIds, this.stmt.liveKeys.all(JSON.stringify(accountIds), now));
  }

  liftBan(accountName: string, now: number): Promise<boolean> {
    this.keyCache.clear();
    return this.database.write(() => this.stmt.liftBan.run(now, accountName).changes > 0);
  }
}
