import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { ClientConfig, CustomTypesConfig, PoolClient, QueryConfig, QueryResultRow } from 'pg';
import type { Category, Pet } from '../schemas.js';
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
import { TurnBatch, type Settled } from './turn-batch.js';

/**
 * Ordered, append-only; entry i is schema version i + 1. Each runs once, inside the migration transaction
 * that records it. Same tables, columns and indexes as the SQLite backend; timestamps are epoch ms (bigint)
 * because the caller's clock supplies them, not the database's.
 */
const MIGRATIONS: string[] = [
  `
  CREATE TABLE categories (id bigint PRIMARY KEY, name text NOT NULL UNIQUE);
  CREATE TABLE pets (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name text NOT NULL,
    category_id bigint NOT NULL REFERENCES categories(id),
    status text NOT NULL CHECK (status IN ('available', 'pending', 'sold')),
    created_at bigint NOT NULL
  );
  CREATE INDEX pets_status_id ON pets (status, id);
  CREATE TABLE accounts (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name text NOT NULL UNIQUE,
    plan text NOT NULL CHECK (plan IN ('free', 'pro', 'business', 'enterprise')),
    per_minute bigint NOT NULL,
    per_day bigint NOT NULL,
    ban_lifted_at bigint,
    created_at bigint NOT NULL
  );
  CREATE TABLE api_keys (
    id text PRIMARY KEY,
    account_id bigint NOT NULL REFERENCES accounts(id),
    hash text NOT NULL UNIQUE,
    hint text NOT NULL,
    created_at bigint NOT NULL,
    expires_at bigint,
    revoked_at bigint
  );
  CREATE INDEX api_keys_account ON api_keys (account_id);
  CREATE TABLE idempotency_keys (
    account_id bigint NOT NULL REFERENCES accounts(id),
    key text NOT NULL,
    fingerprint text NOT NULL,
    status integer NOT NULL,
    -- text, not jsonb: a replay must return the first response byte for byte (jsonb reorders keys).
    body text NOT NULL,
    created_at bigint NOT NULL,
    PRIMARY KEY (account_id, key)
  );
  CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
  `,
  // INSTALLATION_MIGRATION: its one row is inserted by migrate(), with an id made in JavaScript.
  `CREATE TABLE installation (
    id integer PRIMARY KEY CHECK (id = 1),
    installation_id text NOT NULL,
    created_at bigint NOT NULL
  );`,
];

/** Our own URL parameter naming the schema; PostgreSQL would reject it as an unknown startup option. */
const SCHEMA_PARAM = 'schema';
/** Lower-case only, so the name means the same quoted or not (search_path folds unquoted names). */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * Migrations and seeding legitimately run longer than a request may; they get their own connection with
 * this budget instead of the request timeout. Connecting still uses the request timeout, so they fail fast
 * when the database is down.
 */
const ADMIN_TIMEOUT_MS = 10 * 60_000;
/** Rows per statement when seeding: large enough to amortise round trips, small enough for one message. */
const SEED_CHUNK = 50_000;

const INT8_OID = 20;
/**
 * int8 arrives as text because it can exceed 2^53. Every int8 here is an id, a count, a quota or an epoch-ms
 * timestamp, all far below 2^53, and the API must emit JSON integers, not strings. Per pool rather than
 * through pg.types.setTypeParser so other pg users in the process keep the default.
 */
const TYPES: CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID && format !== 'binary'
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format)) as CustomTypesConfig['getTypeParser'],
};

const NODE_UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ECONNABORTED',
]);

/**
 * SQLSTATEs meaning "the database cannot serve this right now": retrying later may succeed, so the API
 * answers 503 rather than 500. Authentication and missing-database errors are included because, seen from a
 * request, the database is just as unreachable (the cause keeps the detail for the logs).
 */
function isUnavailableSqlState(code: string): boolean {
  return (
    code.startsWith('08') || // connection exception
    code.startsWith('53') || // insufficient resources (too many connections, out of memory, disk full)
    code.startsWith('28') || // invalid authorization
    code === '57014' || // query_canceled: statement_timeout fired
    code === '57P01' || // admin_shutdown
    code === '57P02' || // crash_shutdown
    code === '57P03' || // cannot_connect_now (starting up, in recovery)
    code === '57P05' || // idle_session_timeout
    code === '55P03' || // lock_not_available
    code === '40001' || // serialization_failure
    code === '40P01' || // deadlock_detected
    code === '3D000' // invalid_catalog_name: database does not exist
  );
}

/** pg reports pool and socket trouble with plain messages, not codes. */
const UNAVAILABLE_MESSAGES = [
  'timeout exceeded when trying to connect', // pool: no free connection in time
  'timeout expired', // client: connect did not complete in time
  'connection terminated',
  'query read timeout',
  'connection timeout',
  'not queryable',
  'cannot use a pool after calling end',
];

function isUnavailable(error: unknown, depth = 0): boolean {
  if (depth > 4 || typeof error !== 'object' || error === null) return false;
  const { code, message, errors, cause } = error as {
    code?: unknown;
    message?: unknown;
    errors?: unknown;
    cause?: unknown;
  };
  if (typeof code === 'string') {
    if (NODE_UNAVAILABLE_CODES.has(code)) return true;
    if (/^[0-9A-Z]{5}$/.test(code) && isUnavailableSqlState(code)) return true;
  }
  if (typeof message === 'string') {
    const lower = message.toLowerCase();
    if (UNAVAILABLE_MESSAGES.some((m) => lower.includes(m))) return true;
  }
  // Node's happy-eyeballs connect reports every attempted address in an AggregateError.
  if (Array.isArray(errors) && errors.some((e) => isUnavailable(e, depth + 1))) return true;
  return isUnavailable(cause, depth + 1);
}

function translate(error: unknown): unknown {
  return error instanceof StorageUnavailableError || !isUnavailable(error)
    ? error
    : new StorageUnavailableError(error);
}

function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** Errors on connections we are not currently awaiting are reported by the next query; never crash. */
const ignoreError = (): void => {};

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

interface ParsedUrl {
  connectionString: string;
  schema: string | undefined;
  /** Startup `options` carrying the search_path, merged with any the URL already had. */
  options: string | undefined;
}

function parseUrl(url: string): ParsedUrl {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // Let pg report its own error for URLs it understands and WHATWG does not; we only need `schema`.
    return { connectionString: url, schema: undefined, options: undefined };
  }
  const schema = parsed.searchParams.get(SCHEMA_PARAM) ?? undefined;
  if (schema === undefined) return { connectionString: url, schema: undefined, options: undefined };
  if (!SCHEMA_NAME.test(schema)) {
    throw new Error(
      `invalid schema "${schema}" in the database URL: use lower-case letters, digits and _, not starting with a digit`,
    );
  }
  parsed.searchParams.delete(SCHEMA_PARAM);
  // pg lets connection-string parameters override the config object, so a URL `options` would silently
  // replace our search_path; take it out and combine the two instead.
  const urlOptions = parsed.searchParams.get('options');
  parsed.searchParams.delete('options');
  const options = [urlOptions, `-c search_path=${schema}`].filter(Boolean).join(' ');
  return { connectionString: parsed.toString(), schema, options };
}

// Rows are selected with column aliases that make them the domain shapes as they are.
type PetRow = Pet;
type AccountRow = Account;

const PET_COLUMNS = 'id, name, category_id AS "categoryId", status';
const ACCOUNT_COLUMNS =
  'a.id, a.name, a.plan, a.per_minute AS "perMinute", a.per_day AS "perDay", a.ban_lifted_at AS "banLiftedAt"';

/**
 * Hot-path statements, prepared once per connection under a fixed name (pg keeps the name → text map per
 * connection, and PostgreSQL re-plans them itself after DDL).
 */
const SQL = {
  // Every page asked for in one event-loop turn, in one statement: one keyset query per (status, after,
  // limit) tuple. Only one branch runs per tuple (the other's one-time filter is false). The row comparison
  // makes the status branch an index condition on (status, id), so a page costs the same at any depth
  // whatever the status's frequency; with `status = … AND id > …` alone the generic plan scans the primary
  // key and filters.
  listPages: `SELECT q.i, p.id, p.name, p.category_id AS "categoryId", p.status
    FROM unnest($1::text[], $2::bigint[], $3::int[]) WITH ORDINALITY AS q(status, after_id, lim, i)
    CROSS JOIN LATERAL (
      (SELECT id, name, category_id, status FROM pets
        WHERE q.status IS NULL AND id > q.after_id ORDER BY id LIMIT q.lim)
      UNION ALL
      (SELECT id, name, category_id, status FROM pets
        WHERE q.status IS NOT NULL AND status = q.status AND (status, id) > (q.status, q.after_id)
        ORDER BY status, id LIMIT q.lim)
    ) p
    ORDER BY q.i, p.id`,
  getPet: `SELECT ${PET_COLUMNS} FROM pets WHERE id = $1`,
  // Conditional insert instead of relying on the FK: an unknown category is a routine client mistake and
  // should not abort a transaction or fill the server log with errors.
  insertPet: `INSERT INTO pets (name, category_id, status, created_at)
    SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM categories WHERE id = $2)
    RETURNING ${PET_COLUMNS}`,
  idemLock: 'SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0)) AS locked',
  findIdem: `SELECT fingerprint, status, body, created_at AS "createdAt"
    FROM idempotency_keys WHERE account_id = $1 AND key = $2`,
  // Upsert: an expired record for the same key may still be there until the purge runs.
  upsertIdem: `INSERT INTO idempotency_keys (account_id, key, fingerprint, status, body, created_at)
    VALUES ($1, $2, $3, $4, $5, $6)
    ON CONFLICT (account_id, key) DO UPDATE SET fingerprint = excluded.fingerprint, status = excluded.status,
      body = excluded.body, created_at = excluded.created_at`,
  findKeys: `SELECT k.hash, k.id AS "keyId", k.expires_at AS "expiresAt", k.revoked_at AS "revokedAt",
      ${ACCOUNT_COLUMNS}
    FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.hash = ANY($1::text[])`,
} as const;

/** A storage call ran out of its DB_TIMEOUT_MS budget (waiting for a connection, connecting and querying). */
export class StorageTimeoutError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`the database did not answer within ${timeoutMs} ms`);
    this.name = 'StorageTimeoutError';
  }
}

/** Test seams for fault injection; empty in production. */
export interface PostgresHooks {
  /** Runs inside the idempotent creation's transaction, right after the pet row is inserted. */
  afterPetInsert?: (client: PoolClient) => void | Promise<void>;
}

/**
 * PostgreSQL through a bounded `pg` pool. Every request-path call has one budget, `timeoutMs`, for all of
 * its phases together: waiting for a pool slot, connecting, and every query of it (see withClient), so a
 * silent database answers StorageUnavailableError after `timeoutMs`, not after the sum of per-phase limits.
 * statement_timeout stays as well, so the server stops work whose client has given up.
 *
 * `?schema=NAME` in the URL confines every connection to that schema, so several deployments (or test runs)
 * can share one database.
 */
export class PostgresStorage implements Storage {
  readonly kind = 'postgres' as const;
  readonly hooks: PostgresHooks = {};
  private readonly pool: pg.Pool;
  private readonly clientConfig: ClientConfig;
  private readonly schema: string | undefined;
  private readonly timeoutMs: number;
  /** Connections whose rollback failed: their state is unknown, so they are destroyed, not reused. */
  private readonly inDoubt = new WeakSet<PoolClient>();
  private closed: Promise<void> | undefined;
  private installation: string | undefined;
  private readonly lookups = new TurnBatch((hashes: string[]) => this.findKeys(hashes));
  private readonly pages = new TurnBatch((queries: ListPetsQuery[]) => this.listPages(queries));

  constructor(url: string, options: { poolSize: number; timeoutMs: number }) {
    const parsed = parseUrl(url);
    this.schema = parsed.schema;
    this.timeoutMs = options.timeoutMs;
    this.clientConfig = {
      connectionString: parsed.connectionString,
      ...(parsed.options === undefined ? {} : { options: parsed.options }),
      // Bounds the admin connection's connect; for pool calls withClient's budget is the bound, this only
      // keeps the pool from holding waiters and half-open connects longer than anyone waits for them.
      connectionTimeoutMillis: options.timeoutMs,
      statement_timeout: options.timeoutMs,
      // A process that dies mid-transaction must not hold row or advisory locks for long.
      idle_in_transaction_session_timeout: Math.max(10_000, options.timeoutMs * 5),
      keepAlive: true,
      fallback_application_name: 'pet-adoption',
      types: TYPES,
    };
    this.pool = new pg.Pool({ ...this.clientConfig, max: options.poolSize });
    // Idle connections that break (server restart, network) emit here; without a listener Node would
    // crash the process. The pool discards them and the next checkout opens a fresh connection.
    this.pool.on('error', ignoreError);
  }

  private async query<R extends QueryResultRow>(config: QueryConfig): Promise<R[]> {
    return this.withClient(async (client) => (await client.query<R>(config)).rows);
  }

  private async execute(config: QueryConfig): Promise<number> {
    return this.withClient(async (client) => (await client.query(config)).rowCount ?? 0);
  }

  /** Runs fn in a transaction on one pooled connection; commits when it returns, rolls back when it throws. */
  private transaction<T>(fn: (client: PoolClient) => Promise<T>): Promise<T> {
    return this.withClient(async (client) => {
      await client.query('BEGIN');
      try {
        const result = await fn(client);
        await client.query('COMMIT');
        return result;
      } catch (error) {
        // A lost or timed-out connection cannot roll back; withClient discards it and the server aborts
        // the transaction when the connection goes.
        if (!isUnavailable(error)) {
          try {
            await client.query('ROLLBACK');
          } catch {
            this.inDoubt.add(client);
          }
        }
        throw error;
      }
    });
  }

  /**
   * Runs fn on a pooled connection within one budget of `timeoutMs` from the call, whatever phase it is in
   * (waiting for a slot, connecting, a query, a rollback). When the budget runs out the caller gets
   * StorageUnavailableError(StorageTimeoutError) at once, and a connection that was in use is destroyed, not
   * returned: it may still carry the unanswered query or an open transaction. A connection that arrives
   * after the caller has gone is returned unused. Any error that leaves the connection in doubt (network,
   * timeout, failed rollback) also discards it.
   */
  private withClient<T>(fn: (client: PoolClient) => Promise<T>): Promise<T> {
    let expired = false;
    let client: PoolClient | undefined;
    const release = (error?: Error): void => {
      if (!client) return;
      // pg-pool removes its error listener while a connection is checked out; a connection dropped between
      // two of our queries would otherwise emit an unhandled 'error'. The failing query reports it anyway.
      client.off('error', ignoreError);
      // Passing an error makes the pool destroy the connection (pg destroys the socket of a busy one).
      client.release(error);
      client = undefined;
    };
    const work = (async (): Promise<T> => {
      const connected = await this.pool.connect();
      if (expired) {
        connected.release();
        throw new StorageTimeoutError(this.timeoutMs);
      }
      client = connected;
      client.on('error', ignoreError);
      try {
        const result = await fn(connected);
        release();
        return result;
      } catch (error) {
        // A plain SQL error (constraint, bad input) leaves the connection idle and usable.
        release(isUnavailable(error) || this.inDoubt.has(connected) ? asError(error) : undefined);
        throw error;
      }
    })();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        expired = true;
        const timeout = new StorageTimeoutError(this.timeoutMs);
        release(timeout);
        reject(new StorageUnavailableError(timeout));
      }, this.timeoutMs);
    });
    return Promise.race([work, deadline]).then(
      (result) => {
        clearTimeout(timer);
        return result;
      },
      (error: unknown) => {
        clearTimeout(timer);
        throw translate(error);
      },
    );
  }

  /**
   * A dedicated connection with the admin timeout for long operations (migrations, seeding), so they
   * neither trip the request timeout nor hold a pool slot that requests need.
   */
  private async withAdminClient<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
    const client = new pg.Client({
      ...this.clientConfig,
      statement_timeout: ADMIN_TIMEOUT_MS,
      query_timeout: ADMIN_TIMEOUT_MS + 1_000,
      idle_in_transaction_session_timeout: ADMIN_TIMEOUT_MS,
    });
    client.on('error', ignoreError);
    try {
      await client.connect();
      await client.query('BEGIN');
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      // Ending the connection rolls back whatever is open; no need for an explicit ROLLBACK.
      throw translate(error);
    } finally {
      await client.end().catch(ignoreError);
    }
  }

  /** Advisory lock keys are per database, so they carry the schema: tenants must not block each other. */
  private lockKey(purpose: string, ...parts: (string | number)[]): string {
    return JSON.stringify(['pet-adoption', purpose, this.schema ?? '', ...parts]);
  }

  async migrate(): Promise<{ fresh: boolean }> {
    return this.withAdminClient(async (client) => {
      // Transaction-scoped advisory lock: instances starting together queue here, and the lock cannot leak
      // if this process dies (it goes with the transaction). DDL is transactional, so a failed migration
      // leaves nothing behind.
      await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [this.lockKey('migrate')]);
      // Safe to interpolate: validated against SCHEMA_NAME in the constructor.
      if (this.schema) await client.query(`CREATE SCHEMA IF NOT EXISTS ${this.schema}`);
      await client.query(
        'CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, applied_at bigint NOT NULL)',
      );
      const [row] = (
        await client.query<{ version: number | null }>(
          'SELECT max(version) AS version FROM schema_migrations',
        )
      ).rows;
      const current = row?.version ?? 0;
      if (current > MIGRATIONS.length) {
        throw new Error(
          `database schema version ${current} is newer than this release supports (${MIGRATIONS.length}); upgrade the service`,
        );
      }
      for (let version = current + 1; version <= MIGRATIONS.length; version++) {
        await client.query(MIGRATIONS[version - 1]!);
        await client.query('INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)', [
          version,
          Date.now(),
        ]);
      }
      // Under the migration lock, and ON CONFLICT besides: two instances migrating at once write one id.
      if (current < INSTALLATION_MIGRATION) {
        await client.query(
          'INSERT INTO installation (id, installation_id, created_at) VALUES (1, $1, $2) ON CONFLICT (id) DO NOTHING',
          [randomUUID(), Date.now()],
        );
      }
      if (current === 0) {
        await client.query(
          'INSERT INTO categories (id, name) SELECT * FROM unnest($1::bigint[], $2::text[]) ON CONFLICT DO NOTHING',
          [DEFAULT_CATEGORIES.map((c) => c.id), DEFAULT_CATEGORIES.map((c) => c.name)],
        );
      }
      return { fresh: current === 0 };
    });
  }

  /** The pages asked for in one event-loop turn come from one query (TurnBatch), like key lookups. */
  listPets(query: ListPetsQuery): Promise<Pet[]> {
    return this.pages.add(query);
  }

  private async listPages(queries: ListPetsQuery[]): Promise<Settled<Pet[]>[]> {
    const rows = await this.query<PetRow & { i: number }>({
      name: 'pets_list_pages',
      text: SQL.listPages,
      values: [
        queries.map((q) => q.status ?? null),
        queries.map((q) => q.afterId ?? 0),
        queries.map((q) => q.limit),
      ],
    });
    const pages = queries.map((): Pet[] => []);
    for (const { i, ...pet } of rows) pages[i - 1]!.push(pet);
    return pages.map((value) => ({ value }));
  }

  async getPet(id: number): Promise<Pet | undefined> {
    const [pet] = await this.query<PetRow>({ name: 'pets_get', text: SQL.getPet, values: [id] });
    return pet;
  }

  async createPet(pet: NewPetRecord, idem?: IdempotencyInput): Promise<CreatePetResult> {
    const now = idem?.now ?? Date.now();
    const values = [pet.name, pet.categoryId, pet.status, now];
    try {
      if (!idem) {
        // One statement is its own transaction: no need to hold a connection across round trips.
        const [created] = await this.query<PetRow>({ name: 'pets_insert', text: SQL.insertPet, values });
        return created ? { kind: 'created', pet: created } : { kind: 'unknown_category' };
      }
      return await this.transaction(async (client): Promise<CreatePetResult> => {
        // Non-blocking: a duplicate racing the first request answers at once instead of tying up a
        // connection until the first commits. The lock is released by COMMIT/ROLLBACK, after the record
        // below is visible, so a later retry always finds it.
        const lock = await client.query<{ locked: boolean }>({
          name: 'idem_lock',
          text: SQL.idemLock,
          values: [this.lockKey('idempotency', idem.accountId, idem.key)],
        });
        if (!lock.rows[0]?.locked) return { kind: 'idempotency_in_progress' };

        const previous = await client.query<{
          fingerprint: string;
          status: number;
          body: string;
          createdAt: number;
        }>({ name: 'idem_find', text: SQL.findIdem, values: [idem.accountId, idem.key] });
        const record = previous.rows[0];
        if (record && record.createdAt >= idem.notBefore) {
          if (record.fingerprint !== idem.fingerprint) return { kind: 'idempotency_mismatch' };
          return { kind: 'replayed', status: record.status, body: JSON.parse(record.body) as Pet };
        }

        const inserted = await client.query<PetRow>({ name: 'pets_insert', text: SQL.insertPet, values });
        const created = inserted.rows[0];
        if (!created) return { kind: 'unknown_category' };
        await this.hooks.afterPetInsert?.(client);
        await client.query({
          name: 'idem_upsert',
          text: SQL.upsertIdem,
          values: [idem.accountId, idem.key, idem.fingerprint, 201, JSON.stringify(created), idem.now],
        });
        return { kind: 'created', pet: created };
      });
    } catch (error) {
      // The EXISTS check cannot see a category deleted concurrently; the foreign key still can.
      const constraint = (error as { constraint?: unknown }).constraint;
      if (sqlState(error) === '23503' && constraint === 'pets_category_id_fkey')
        return { kind: 'unknown_category' };
      throw error;
    }
  }

  async seedPets(count: number, now: number): Promise<number> {
    if (count <= 0) return 0;
    return this.withAdminClient(async (client) => {
      // Serialise seeders so concurrent runs do not reuse the same numbers.
      await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [this.lockKey('seed')]);
      const [row] = (await client.query<{ n: number }>('SELECT count(*) AS n FROM pets')).rows;
      const start = row?.n ?? 0;
      // Rows are built with demoPet so every backend numbers and names demo pets identically; unnest turns
      // the three arrays into rows, one statement per chunk. One transaction: all or nothing.
      for (let offset = 0; offset < count; offset += SEED_CHUNK) {
        const size = Math.min(SEED_CHUNK, count - offset);
        const names: string[] = new Array<string>(size);
        const categories: number[] = new Array<number>(size);
        const statuses: string[] = new Array<string>(size);
        for (let j = 0; j < size; j++) {
          const p = demoPet(start + offset + j);
          names[j] = p.name;
          categories[j] = p.categoryId;
          statuses[j] = p.status;
        }
        await client.query(
          `INSERT INTO pets (name, category_id, status, created_at)
           SELECT n, c, s, $4 FROM unnest($1::text[], $2::bigint[], $3::text[]) AS t(n, c, s)`,
          [names, categories, statuses, now],
        );
      }
      return count;
    });
  }

  listCategories(): Promise<Category[]> {
    return this.query<Category>({
      name: 'categories_list',
      text: 'SELECT id, name FROM categories ORDER BY id',
    });
  }

  async upsertAccount(input: AccountInput, now: number): Promise<Account> {
    return this.transaction(async (client) => {
      const newPlan = input.plan ?? 'free';
      const newQuota = quotaFor(newPlan, input.perMinute, input.perDay);
      // Insert-first rather than select-first: two concurrent creations of the same account cannot both
      // miss it and collide on the unique name.
      const inserted = await client.query<AccountRow>(
        `INSERT INTO accounts (name, plan, per_minute, per_day, created_at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (name) DO NOTHING
         RETURNING id, name, plan, per_minute AS "perMinute", per_day AS "perDay", ban_lifted_at AS "banLiftedAt"`,
        [input.name, newPlan, newQuota.perMinute, newQuota.perDay, now],
      );
      if (inserted.rows[0]) return inserted.rows[0];
      const found = await client.query<AccountRow>(
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
    const [account] = await this.query<AccountRow>({
      text: `SELECT ${ACCOUNT_COLUMNS} FROM accounts a WHERE a.name = $1`,
      values: [name],
    });
    return account;
  }

  async countAccounts(): Promise<number> {
    const [row] = await this.query<{ n: number }>({ text: 'SELECT count(*) AS n FROM accounts' });
    return row?.n ?? 0;
  }

  async createKey(
    accountId: number,
    key: { id: string; hash: string; hint: string; expiresAt: number | null },
    now: number,
  ): Promise<void> {
    await this.execute({
      text: 'INSERT INTO api_keys (id, account_id, hash, hint, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)',
      values: [key.id, accountId, key.hash, key.hint, now, key.expiresAt],
    });
  }

  listKeys(accountName?: string): Promise<ApiKeyInfo[]> {
    // COLLATE "C": byte order, as in SQLite, whatever the database's locale (key ids are mixed-case).
    return this.query<ApiKeyInfo>({
      text: `SELECT k.id, a.name AS account, k.hint, k.created_at AS "createdAt", k.expires_at AS "expiresAt",
                    k.revoked_at AS "revokedAt"
             FROM api_keys k JOIN accounts a ON a.id = k.account_id
             WHERE $1::text IS NULL OR a.name = $1
             ORDER BY k.created_at, k.id COLLATE "C"`,
      values: [accountName ?? null],
    });
  }

  async revokeKey(keyId: string, now: number): Promise<boolean> {
    // coalesce: revoking twice keeps the first revocation time.
    const changed = await this.execute({
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
    const rows = await this.query<
      AccountRow & { hash: string; keyId: string; expiresAt: number | null; revokedAt: number | null }
    >({ name: 'keys_find_by_hashes', text: SQL.findKeys, values: [hashes] });
    const byHash = new Map<string, KeyPrincipal>();
    for (const { hash, keyId, expiresAt, revokedAt, ...account } of rows) {
      byHash.set(hash, { keyId, expiresAt, revokedAt, account });
    }
    return hashes.map((hash) => ({ value: byHash.get(hash) }));
  }

  async liftBan(accountName: string, now: number): Promise<boolean> {
    const changed = await this.execute({
      text: 'UPDATE accounts SET ban_lifted_at = $1 WHERE name = $2',
      values: [now, accountName],
    });
    return changed > 0;
  }

  async purgeIdempotency(before: number): Promise<void> {
    await this.execute({ text: 'DELETE FROM idempotency_keys WHERE created_at < $1', values: [before] });
  }

  async installationId(): Promise<string> {
    if (this.installation === undefined) {
      const [row] = await this.query<{ id: string }>({
        text: 'SELECT installation_id AS id FROM installation WHERE id = 1',
      });
      if (!row) throw new Error('the installation id is missing: run the migrations first');
      this.installation = row.id;
    }
    return this.installation;
  }

  async ping(): Promise<void> {
    await this.query({ text: 'SELECT 1' });
  }

  /** Idempotent: the server's shutdown hook and a test's cleanup may both call it. */
  close(): Promise<void> {
    this.closed ??= this.pool.end();
    return this.closed;
  }
}
