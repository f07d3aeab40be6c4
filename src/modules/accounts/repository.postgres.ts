import type { PoolClient } from 'pg';
import type { PostgresDatabase } from '../../db/postgres.js';
import { TurnBatch, type Settled } from '../../db/turn-batch.js';
import type {
  Account,
  AccountInput,
  AccountRepository,
  ApiKeyInfo,
  KeyPrincipal,
  LiveScopes,
  NewKeyRecord,
  PostgresLiveKeys,
} from './repository.js';
import { quotaFor } from './quota.js';
import { effectiveScopes, formatScopes, parseScopes, scopesByAccount } from './scopes.js';

// Rows are selected with column aliases that make them the domain shapes as they are.
const ACCOUNT_COLUMNS =
  'a.id, a.name, a.plan, a.per_minute AS "perMinute", a.per_day AS "perDay", a.ban_lifted_at AS "banLiftedAt"';

// The read version (migration 010) rides along, in the same snapshot and round trip: one row for it even
// when no key matches, then one per key found.
const FIND_KEYS = `SELECT v.version AS "readVersion", k.hash, k.id AS "keyId", k.expires_at AS "expiresAt",
    k.revoked_at AS "revokedAt", k.scopes, ${ACCOUNT_COLUMNS}
  FROM (SELECT sum(version)::bigint AS version FROM read_versions) v
  LEFT JOIN (api_keys k JOIN accounts a ON a.id = k.account_id) ON k.hash = ANY($1::text[])`;

const LIVE_KEYS = `SELECT account_id AS "accountId", scopes FROM api_keys
  WHERE account_id = ANY($1::bigint[]) AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $2)`;

export class PostgresAccountRepository implements AccountRepository, PostgresLiveKeys {
  private readonly lookups = new TurnBatch((hashes: string[]) => this.findKeys(hashes));

  constructor(private readonly db: PostgresDatabase) {}

  async upsertAccount(input: AccountInput, now: number): Promise<Account> {
    return this.db.transaction(async (client) => {
      const newPlan = input.plan ?? 'free';
      const newQuota = quotaFor(newPlan, input.perMinute, input.perDay);
      // Insert-first rather than select-first: two concurrent creations of the same account cannot both
      // miss it and collide on the unique name.
      const inserted = await client.query<Account>(
        `INSERT INTO accounts (name, plan, per_minute, per_day, created_at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (name) DO NOTHING
         RETURNING id, name, plan, per_minute AS "perMinute", per_day AS "perDay", ban_lifted_at AS "banLiftedAt"`,
        [input.name, newPlan, newQuota.perMinute, newQuota.perDay, now],
      );
      if (inserted.rows[0]) return inserted.rows[0];
      const found = await client.query<Account>(
        `SELECT ${ACCOUNT_COLUMNS} FROM accounts a WHERE a.name = $1 FOR UPDATE`,
        [input.name],
      );
      const existing = found.rows[0];
      // Only a concurrent delete could cause this, and accounts are never deleted.
      if (!existing) throw new Error(`account ${input.name} vanished during upsert`);
      const plan = input.plan ?? existing.plan;
      // Same rule as SQLite: an enterprise account keeps its custom numbers unless new ones are given.
      const quota = quotaFor(
        plan,
        input.perMinute ?? (existing.plan === 'enterprise' ? existing.perMinute : undefined),
        input.perDay ?? (existing.plan === 'enterprise' ? existing.perDay : undefined),
      );
      await client.query('UPDATE accounts SET plan = $1, per_minute = $2, per_day = $3 WHERE id = $4', [
        plan,
        quota.perMinute,
        quota.perDay,
        existing.id,
      ]);
      return { ...existing, plan, ...quota };
    });
  }

  async findAccount(name: string): Promise<Account | undefined> {
    const [account] = await this.db.query<Account>({
      text: `SELECT ${ACCOUNT_COLUMNS} FROM accounts a WHERE a.name = $1`,
      values: [name],
    });
    return account;
  }

  async countAccounts(): Promise<number> {
    const [row] = await this.db.query<{ n: number }>({ text: 'SELECT count(*) AS n FROM accounts' });
    return row?.n ?? 0;
  }

  async createKey(accountId: number, key: NewKeyRecord, now: number): Promise<void> {
    await this.db.execute({
      text: `INSERT INTO api_keys (id, account_id, hash, hint, created_at, expires_at, scopes)
             VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      values: [key.id, accountId, key.hash, key.hint, now, key.expiresAt, formatScopes(key.scopes ?? null)],
    });
  }

  async listKeys(accountName?: string): Promise<ApiKeyInfo[]> {
    // COLLATE "C": byte order, as in SQLite, whatever the database's locale (key ids are mixed-case).
    const rows = await this.db.query<Omit<ApiKeyInfo, 'scopes'> & { scopes: string | null }>({
      text: `SELECT k.id, a.name AS account, k.hint, k.created_at AS "createdAt", k.expires_at AS "expiresAt",
                    k.revoked_at AS "revokedAt", k.scopes
             FROM api_keys k JOIN accounts a ON a.id = k.account_id
             WHERE $1::text IS NULL OR a.name = $1
             ORDER BY k.created_at, k.id COLLATE "C"`,
      values: [accountName ?? null],
    });
    return rows.map((row) => ({ ...row, scopes: parseScopes(row.scopes) }));
  }

  async revokeKey(keyId: string, now: number): Promise<boolean> {
    // coalesce: revoking twice keeps the first revocation time.
    const changed = await this.db.execute({
      text: 'UPDATE api_keys SET revoked_at = coalesce(revoked_at, $1) WHERE id = $2',
      values: [now, keyId],
    });
    return changed > 0;
  }

  /**
   * The lookups of one event-loop turn go to the database as one query (TurnBatch): one round trip per
   * turn instead of one per request. Each still reads the key as committed after its request arrived, so
   * revocation takes effect on the next request.
   */
  findKeyByHash(hash: string): Promise<KeyPrincipal | undefined> {
    return this.lookups.add(hash);
  }

  private async findKeys(hashes: string[]): Promise<Settled<KeyPrincipal | undefined>[]> {
    const rows = await this.db.query<
      Account & {
        readVersion: number;
        hash: string | null;
        keyId: string;
        expiresAt: number | null;
        revokedAt: number | null;
        scopes: string | null;
      }
    >({ name: 'keys_find_by_hashes', text: FIND_KEYS, values: [hashes] });
    const byHash = new Map<string, KeyPrincipal>();
    // Also the page cache's version for the requests of this turn (PostgresDatabase.readVersion).
    if (rows[0]) this.db.observeReadVersion(rows[0].readVersion);
    for (const row of rows) {
      if (row.hash === null) continue;
      const { id, name, plan, perMinute, perDay, banLiftedAt } = row;
      byHash.set(row.hash, {
        keyId: row.keyId,
        expiresAt: row.expiresAt,
        revokedAt: row.revokedAt,
        scopes: effectiveScopes(parseScopes(row.scopes)),
        account: { id, name, plan, perMinute, perDay, banLiftedAt },
      });
    }
    return hashes.map((hash) => ({ value: byHash.get(hash) }));
  }

  async liveScopes(
    client: PoolClient | undefined,
    accountIds: readonly number[],
    now: number,
  ): Promise<LiveScopes> {
    const query = { text: LIVE_KEYS, values: [accountIds, now] };
    type KeyRow = { accountId: number; scopes: string | null };
    const rows = client ? (await client.query<KeyRow>(query)).rows : await this.db.query<KeyRow>(query);
    return scopesByAccount(accountIds, rows);
  }

  async lockAccount(client: PoolClient, accountId: number): Promise<void> {
    await client.query('SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE', [accountId]);
  }

  async liftBan(accountName: string, now: number): Promise<boolean> {
    const changed = await this.db.execute({
      text: 'UPDATE accounts SET ban_lifted_at = $1 WHERE name = $2',
      values: [now, accountName],
    });
    return changed > 0;
  }
}
