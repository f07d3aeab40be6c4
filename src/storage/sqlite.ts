import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import type { Category, Pet, PetStatus } from '../schemas.js';
import {
  DEFAULT_CATEGORIES,
  INSTALLATION_MIGRATION,
  StorageUnavailableError,
  demoPet,
  quotaFor,
  type Account,
  type AccountInput,
  type ApiKeyInfo,
  type CreatePetResult,
  type IdempotencyInput,
  type KeyPrincipal,
  type ListPetsQuery,
  type NewPetRecord,
  type Storage,
} from './storage.js';
import { settle, TurnBatch, type Settled } from './turn-batch.js';

/** Ordered, append-only. Each entry runs once, inside the transaction that records it. */
const MIGRATIONS: string[] = [
  `
  CREATE TABLE categories (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
  CREATE TABLE pets (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    category_id INTEGER NOT NULL REFERENCES categories(id),
    status TEXT NOT NULL CHECK (status IN ('available', 'pending', 'sold')),
    created_at INTEGER NOT NULL
  );
  CREATE INDEX pets_status_id ON pets (status, id);
  CREATE TABLE accounts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    plan TEXT NOT NULL CHECK (plan IN ('free', 'pro', 'business', 'enterprise')),
    per_minute INTEGER NOT NULL,
    per_day INTEGER NOT NULL,
    ban_lifted_at INTEGER,
    created_at INTEGER NOT NULL
  );
  CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    hash TEXT NOT NULL UNIQUE,
    hint TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER,
    revoked_at INTEGER
  );
  CREATE INDEX api_keys_account ON api_keys (account_id);
  CREATE TABLE idempotency_keys (
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    status INTEGER NOT NULL,
    body TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (account_id, key)
  );
  CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
  `,
  // INSTALLATION_MIGRATION: its one row is inserted by runMigrations, with an id made in JavaScript.
  `CREATE TABLE installation (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    installation_id TEXT NOT NULL,
    created_at INTEGER NOT NULL
  );`,
];

// Rows are selected with column aliases that make them the domain shapes as they are.
type PetRow = Pet;
type AccountRow = Account;

type PetRawRow = [id: number, name: string, categoryId: number, status: PetStatus];

function petFromRaw(row: PetRawRow): Pet {
  return { id: row[0], name: row[1], categoryId: row[2], status: row[3] };
}

function petsFromRaw(rows: PetRawRow[]): Pet[] {
  const pets = new Array<Pet>(rows.length);
  for (let i = 0; i < rows.length; i++) pets[i] = petFromRaw(rows[i]!);
  return pets;
}

/** How many distinct page sizes get their own prepared statement (per query shape). */
const MAX_LIMIT_STATEMENTS = 128;

/** Keys remembered by findKeyByHash; beyond this the oldest is forgotten (bounds memory under key churn). */
const KEY_CACHE_SIZE = 20_000;

const PET_COLUMNS = 'id, name, category_id AS categoryId, status';
const ACCOUNT_COLUMNS =
  'a.id, a.name, a.plan, a.per_minute AS perMinute, a.per_day AS perDay, a.ban_lifted_at AS banLiftedAt';

/** The database cannot serve this right now (locked, I/O error, disk full): a 503, not a 500. */
function translate(error: unknown): unknown {
  const code = (error as { code?: string } | null)?.code ?? '';
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_IOERR') || code === 'SQLITE_FULL') {
    return new StorageUnavailableError(error);
  }
  return error;
}

function wrap<T>(fn: () => T): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (error) {
    return Promise.reject(translate(error));
  }
}

function isBusy(error: unknown): boolean {
  return ((error as { code?: string } | null)?.code ?? '').startsWith('SQLITE_BUSY');
}

/**
 * How long one attempt at a write waits for another connection's write lock inside SQLite (busy_timeout).
 * The wait blocks the event loop, so it is kept to a few milliseconds; longer waits happen between attempts
 * (see withWriteLock), with the loop free.
 */
export const SQLITE_BUSY_WAIT_MS = 5;
/** Pauses between attempts while another process holds the write lock: short first, then capped. */
const BUSY_BACKOFF_MS = [1, 2, 5, 10, 20, 50];
/** The lock wait while opening the database and migrating, which happens once, before serving. */
const STARTUP_BUSY_WAIT_MS = 5_000;

/** Test seams for fault injection; empty in production. */
export interface SqliteHooks {
  /** Runs inside a creation's savepoint, right after the pet row is inserted. */
  afterPetInsert?: (db: Database.Database) => void;
  /** Called each time a write finds the write lock held by another connection and will try again. */
  onBusy?: (attempt: number) => void;
}

/**
 * SQLite through better-sqlite3: WAL journal (readers never wait for the writer), foreign keys on,
 * every statement prepared once. `synchronous=NORMAL` keeps commits durable across a process crash;
 * `FULL` adds an fsync per commit for power loss.
 */
export class SqliteStorage implements Storage {
  readonly kind = 'sqlite' as const;
  readonly hooks: SqliteHooks = {};
  private readonly db: Database.Database;
  private readonly timeoutMs: number;
  private readonly stmt;
  private readonly createPetTransaction: (
    pet: NewPetRecord,
    idem: IdempotencyInput | undefined,
  ) => CreatePetResult;
  /** Creations of one event-loop turn, committed together; see createPet. */
  private readonly creations: TurnBatch<[NewPetRecord, IdempotencyInput | undefined], CreatePetResult>;
  /** Key lookups of one event-loop turn; see findKeyByHash. */
  private readonly lookups: TurnBatch<string, KeyPrincipal | undefined>;
  private fresh = false;
  private installation: string | undefined;
  /** Page queries by page size, with and without the status filter; see listStatement. */
  private readonly listStatements = {
    all: new Map<number, Database.Statement<unknown[], PetRawRow>>(),
    status: new Map<number, Database.Statement<unknown[], PetRawRow>>(),
  };
  private readonly keyCache = new Map<string, KeyPrincipal>();
  private keyCacheVersion = -1;

  /**
   * @param options.timeoutMs how long a write keeps trying while another connection (a CLI command, a second
   *   instance) holds the write lock, before it fails with StorageUnavailableError (DB_TIMEOUT_MS).
   */
  constructor(path: string, options: { synchronous?: 'normal' | 'full'; timeoutMs?: number } = {}) {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    this.timeoutMs = options.timeoutMs ?? 2_000;
    this.db = new Database(path);
    // Opening and migrating may wait for another process's migration, before anything else runs.
    this.db.pragma(`busy_timeout = ${STARTUP_BUSY_WAIT_MS}`);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma(`synchronous = ${options.synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
    this.db.pragma('foreign_keys = ON');
    this.runMigrations();
    this.db.pragma(`busy_timeout = ${SQLITE_BUSY_WAIT_MS}`);
    const db = this.db;
    this.stmt = {
      // Raw (array) rows: better-sqlite3 builds row objects property by property through the V8 API, which
      // costs more than the query itself; petFromRaw builds them in JavaScript with one fixed shape.
      listAll: db
        .prepare<[number, number], PetRawRow>(
          `SELECT ${PET_COLUMNS} FROM pets WHERE id > ? ORDER BY id LIMIT ?`,
        )
        .raw(true),
      listByStatus: db
        .prepare<[string, number, number], PetRawRow>(
          `SELECT ${PET_COLUMNS} FROM pets WHERE status = ? AND id > ? ORDER BY id LIMIT ?`,
        )
        .raw(true),
      getPet: db.prepare<[number], PetRawRow>(`SELECT ${PET_COLUMNS} FROM pets WHERE id = ?`).raw(true),
      dataVersion: db.prepare<[], number>('PRAGMA data_version').pluck(true),
      insertPet: db.prepare<[string, number, string, number], PetRow>(
        `INSERT INTO pets (name, category_id, status, created_at) VALUES (?, ?, ?, ?) RETURNING ${PET_COLUMNS}`,
      ),
      categoryExists: db.prepare<[number], { one: number }>('SELECT 1 AS one FROM categories WHERE id = ?'),
      listCategories: db.prepare<[], Category>('SELECT id, name FROM categories ORDER BY id'),
      findIdem: db.prepare<
        [number, string],
        { fingerprint: string; status: number; body: string; createdAt: number }
      >(
        'SELECT fingerprint, status, body, created_at AS createdAt FROM idempotency_keys WHERE account_id = ? AND key = ?',
      ),
      upsertIdem: db.prepare<[number, string, string, number, string, number]>(
        `INSERT INTO idempotency_keys (account_id, key, fingerprint, status, body, created_at) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (account_id, key) DO UPDATE SET fingerprint = excluded.fingerprint, status = excluded.status,
         body = excluded.body, created_at = excluded.created_at`,
      ),
      purgeIdem: db.prepare<[number]>('DELETE FROM idempotency_keys WHERE created_at < ?'),
      findAccount: db.prepare<[string], AccountRow>(
        `SELECT ${ACCOUNT_COLUMNS} FROM accounts a WHERE a.name = ?`,
      ),
      insertAccount: db.prepare<[string, string, number, number, number], AccountRow>(
        `INSERT INTO accounts (name, plan, per_minute, per_day, created_at) VALUES (?, ?, ?, ?, ?)
         RETURNING id, name, plan, per_minute AS perMinute, per_day AS perDay, ban_lifted_at AS banLiftedAt`,
      ),
      updateAccount: db.prepare<[string, number, number, number]>(
        'UPDATE accounts SET plan = ?, per_minute = ?, per_day = ? WHERE id = ?',
      ),
      countAccounts: db.prepare<[], { n: number }>('SELECT count(*) AS n FROM accounts'),
      insertKey: db.prepare<[string, number, string, string, number, number | null]>(
        'INSERT INTO api_keys (id, account_id, hash, hint, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      listKeys: db.prepare<[string | null, string | null], ApiKeyInfo>(
        `SELECT k.id, a.name AS account, k.hint, k.created_at AS createdAt, k.expires_at AS expiresAt,
                k.revoked_at AS revokedAt
         FROM api_keys k JOIN accounts a ON a.id = k.account_id
         WHERE ? IS NULL OR a.name = ? ORDER BY k.created_at, k.id`,
      ),
      revokeKey: db.prepare<[number, string]>(
        'UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?',
      ),
      findKey: db.prepare<
        [string],
        AccountRow & { keyId: string; expiresAt: number | null; revokedAt: number | null }
      >(
        `SELECT k.id AS keyId, k.expires_at AS expiresAt, k.revoked_at AS revokedAt, ${ACCOUNT_COLUMNS}
         FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.hash = ?`,
      ),
      liftBan: db.prepare<[number, string]>('UPDATE accounts SET ban_lifted_at = ? WHERE name = ?'),
    };
    this.createPetTransaction = db.transaction((pet: NewPetRecord, idem: IdempotencyInput | undefined) =>
      this.createInTransaction(pet, idem),
    );
    // Inside the batch's transaction each creation runs as a nested one, i.e. under its own SAVEPOINT: one
    // that throws is rolled back alone and the others still commit.
    const groupCommit = db.transaction((batch: [NewPetRecord, IdempotencyInput | undefined][]) => {
      const outcomes: Settled<CreatePetResult>[] = [];
      for (const [pet, idem] of batch) {
        const outcome = settle(() => this.createPetTransaction(pet, idem));
        // Some errors (I/O error, disk full, out of memory) make SQLite roll the whole transaction back:
        // the batch's earlier creations are gone with it, and the next savepoint would silently become a
        // transaction of its own. Every caller of the batch fails instead.
        if (!db.inTransaction) {
          throw new StorageUnavailableError('error' in outcome ? outcome.error : undefined);
        }
        outcomes.push(outcome);
      }
      return outcomes;
    });
    // BEGIN IMMEDIATE: the write lock is taken before anything is read, so a busy database is found at the
    // start of the batch, where it can be retried whole, not after reads (where waiting cannot help).
    this.creations = new TurnBatch(
      (batch) => this.withWriteLock(() => groupCommit.immediate(batch)),
      translate,
    );
    this.lookups = new TurnBatch((hashes) => {
      const version = this.stmt.dataVersion.get()!;
      if (version !== this.keyCacheVersion) {
        this.keyCache.clear();
        this.keyCacheVersion = version;
      }
      return hashes.map((hash) => settle(() => this.lookUpKey(hash)));
    }, translate);
  }

  private runMigrations(): void {
    // BEGIN IMMEDIATE takes the write lock first, so two processes starting at once cannot both migrate.
    const migrate = this.db.transaction(() => {
      this.db.exec(
        'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)',
      );
      const row = this.db.prepare('SELECT max(version) AS v FROM schema_migrations').get() as {
        v: number | null;
      };
      const current = row.v ?? 0;
      if (current === 0) this.fresh = true;
      for (let version = current + 1; version <= MIGRATIONS.length; version++) {
        this.db.exec(MIGRATIONS[version - 1]!);
        this.db
          .prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)')
          .run(version, Date.now());
      }
      if (current < INSTALLATION_MIGRATION) {
        this.db
          .prepare('INSERT OR IGNORE INTO installation (id, installation_id, created_at) VALUES (1, ?, ?)')
          .run(randomUUID(), Date.now());
      }
      const insertCategory = this.db.prepare('INSERT OR IGNORE INTO categories (id, name) VALUES (?, ?)');
      if (current === 0) for (const c of DEFAULT_CATEGORIES) insertCategory.run(c.id, c.name);
    });
    migrate.immediate();
  }

  migrate(): Promise<{ fresh: boolean }> {
    return this.write(() => {
      this.runMigrations();
      return { fresh: this.fresh };
    });
  }

  /**
   * Runs a write (one transaction or one statement: all or nothing) now, or, when another connection holds
   * the write lock (SQLITE_BUSY), again after short pauses with the event loop free, until `timeoutMs` has
   * passed since the first attempt; then the SQLITE_BUSY goes to the caller (a 503). Each attempt blocks
   * the loop for at most SQLITE_BUSY_WAIT_MS. When the first attempt succeeds the result is synchronous.
   */
  private withWriteLock<T>(fn: () => T): T | Promise<T> {
    try {
      return fn();
    } catch (error) {
      if (!isBusy(error)) throw error;
      return this.retryWhileBusy(fn, error);
    }
  }

  private retryWhileBusy<T>(fn: () => T, firstError: unknown): Promise<T> {
    const giveUpAt = performance.now() + this.timeoutMs;
    let attempt = 0;
    return new Promise((resolve, reject) => {
      const retry = (error: unknown): void => {
        const left = giveUpAt - performance.now();
        if (left <= 0 || !this.db.open) {
          reject(error);
          return;
        }
        const pause = Math.min(BUSY_BACKOFF_MS[Math.min(attempt, BUSY_BACKOFF_MS.length - 1)]!, left);
        attempt++;
        this.hooks.onBusy?.(attempt);
        setTimeout(() => {
          try {
            resolve(fn());
          } catch (next) {
            if (isBusy(next)) retry(next);
            else reject(next);
          }
        }, pause);
      };
      retry(firstError);
    });
  }

  /** A write that waits (off the event loop, within timeoutMs) for another connection's write lock. */
  private write<T>(fn: () => T): Promise<T> {
    try {
      return Promise.resolve(this.withWriteLock(fn)).catch((error: unknown) => {
        throw translate(error);
      });
    } catch (error) {
      return Promise.reject(translate(error));
    }
  }

  /**
   * A bound `LIMIT ?` makes SQLite recompile the statement on every run (the planner takes the limit into
   * account, so a new value expires the plan): one statement per page size, prepared on first use, keeps
   * the page query prepared for real. Page sizes are 2..101 through the API; past MAX_LIMIT_STATEMENTS
   * distinct sizes, the bound form is used.
   */
  private listStatement(
    byStatus: boolean,
    limit: number,
  ): Database.Statement<unknown[], PetRawRow> | undefined {
    const cache = byStatus ? this.listStatements.status : this.listStatements.all;
    let stmt = cache.get(limit);
    if (stmt === undefined && Number.isSafeInteger(limit) && limit > 0 && cache.size < MAX_LIMIT_STATEMENTS) {
      const where = byStatus ? 'status = ? AND id > ?' : 'id > ?';
      stmt = this.db
        .prepare<unknown[], PetRawRow>(
          `SELECT ${PET_COLUMNS} FROM pets WHERE ${where} ORDER BY id LIMIT ${limit}`,
        )
        .raw(true);
      cache.set(limit, stmt);
    }
    return stmt;
  }

  listPets(query: ListPetsQuery): Promise<Pet[]> {
    return wrap(() => {
      const afterId = query.afterId ?? 0;
      const stmt = this.listStatement(Boolean(query.status), query.limit);
      let rows: PetRawRow[];
      if (query.status) {
        rows = stmt
          ? stmt.all(query.status, afterId)
          : this.stmt.listByStatus.all(query.status, afterId, query.limit);
      } else {
        rows = stmt ? stmt.all(afterId) : this.stmt.listAll.all(afterId, query.limit);
      }
      return petsFromRaw(rows);
    });
  }

  getPet(id: number): Promise<Pet | undefined> {
    return wrap(() => {
      const row = this.stmt.getPet.get(id);
      return row && petFromRaw(row);
    });
  }

  private createInTransaction(pet: NewPetRecord, idem: IdempotencyInput | undefined): CreatePetResult {
    if (idem) {
      const previous = this.stmt.findIdem.get(idem.accountId, idem.key);
      if (previous && previous.createdAt >= idem.notBefore) {
        if (previous.fingerprint !== idem.fingerprint) return { kind: 'idempotency_mismatch' };
        return { kind: 'replayed', status: previous.status, body: JSON.parse(previous.body) as Pet };
      }
    }
    if (!this.stmt.categoryExists.get(pet.categoryId)) return { kind: 'unknown_category' };
    const created = this.stmt.insertPet.get(pet.name, pet.categoryId, pet.status, idem?.now ?? Date.now())!;
    this.hooks.afterPetInsert?.(this.db);
    if (idem) {
      this.stmt.upsertIdem.run(
        idem.accountId,
        idem.key,
        idem.fingerprint,
        201,
        JSON.stringify(created),
        idem.now,
      );
    }
    return { kind: 'created', pet: created };
  }

  /**
   * Group commit: creations requested during one turn of the event loop are written in one transaction,
   * committed before any of their promises settles. Every acknowledged pet is as durable as before, but the
   * commit's fixed cost (locks, WAL frames for the same table and index pages, the sequence row) is paid
   * once per turn instead of once per request: under 50 concurrent writers that was most of a POST's CPU.
   * A quiet server commits each creation alone, one turn later. Within the batch creations run in arrival
   * order, so a duplicate Idempotency-Key replays the first; the in-progress case never arises here.
   */
  createPet(pet: NewPetRecord, idempotency?: IdempotencyInput): Promise<CreatePetResult> {
    return this.creations.add([pet, idempotency]);
  }

  async seedPets(count: number, now: number): Promise<number> {
    const start = await wrap(
      () => (this.db.prepare('SELECT count(*) AS n FROM pets').get() as { n: number }).n,
    );
    const insert = this.db.prepare(
      'INSERT INTO pets (name, category_id, status, created_at) VALUES (?, ?, ?, ?)',
    );
    const batch = this.db.transaction((from: number, to: number) => {
      for (let i = from; i < to; i++) {
        const p = demoPet(start + i);
        insert.run(p.name, p.categoryId, p.status, now);
      }
    });
    // Chunk by chunk, each its own transaction: the server's writes get the lock in between.
    for (let i = 0; i < count; i += 50_000) {
      const to = Math.min(count, i + 50_000);
      await this.write(() => batch.immediate(i, to));
    }
    return count;
  }

  listCategories(): Promise<Category[]> {
    return wrap(() => this.stmt.listCategories.all());
  }

  upsertAccount(input: AccountInput, now: number): Promise<Account> {
    this.keyCache.clear();
    return this.write(() =>
      this.db
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
    return wrap(() => this.stmt.findAccount.get(name));
  }

  countAccounts(): Promise<number> {
    return wrap(() => this.stmt.countAccounts.get()!.n);
  }

  createKey(
    accountId: number,
    key: { id: string; hash: string; hint: string; expiresAt: number | null },
    now: number,
  ): Promise<void> {
    this.keyCache.clear();
    return this.write(() => {
      this.stmt.insertKey.run(key.id, accountId, key.hash, key.hint, now, key.expiresAt);
    });
  }

  listKeys(accountName?: string): Promise<ApiKeyInfo[]> {
    return wrap(() => this.stmt.listKeys.all(accountName ?? null, accountName ?? null));
  }

  revokeKey(keyId: string, now: number): Promise<boolean> {
    this.keyCache.clear();
    return this.write(() => this.stmt.revokeKey.run(now, keyId).changes > 0);
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
    const { keyId, expiresAt, revokedAt, ...account } = row;
    const principal: KeyPrincipal = Object.freeze({
      keyId,
      expiresAt,
      revokedAt,
      account: Object.freeze(account),
    });
    if (this.keyCache.size >= KEY_CACHE_SIZE) this.keyCache.delete(this.keyCache.keys().next().value!);
    this.keyCache.set(hash, principal);
    return principal;
  }

  liftBan(accountName: string, now: number): Promise<boolean> {
    this.keyCache.clear();
    return this.write(() => this.stmt.liftBan.run(now, accountName).changes > 0);
  }

  purgeIdempotency(before: number): Promise<void> {
    return this.write(() => {
      this.stmt.purgeIdem.run(before);
    });
  }

  installationId(): Promise<string> {
    return wrap(
      () =>
        (this.installation ??= this.db
          .prepare<[], string>('SELECT installation_id FROM installation WHERE id = 1')
          .pluck(true)
          .get()!),
    );
  }

  ping(): Promise<void> {
    return wrap(() => {
      this.db.prepare('SELECT 1').get();
    });
  }

  close(): Promise<void> {
    if (this.db.open) this.db.close();
    return Promise.resolve();
  }
}
