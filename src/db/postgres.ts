import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { ClientConfig, CustomTypesConfig, PoolClient, QueryConfig, QueryResultRow } from 'pg';
import {
  INSTALLATION_MIGRATION,
  RepositoryCache,
  StorageUnavailableError,
  type Database,
  type RepositoryFactory,
} from './database.js';
import type { DbCosts } from './costs.js';
import { pendingMigrations } from './migrations.js';
import { isUnavailable, translatePostgresError } from './postgres-errors.js';

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

/** A database call ran out of its DB_TIMEOUT_MS budget (waiting for a connection, connecting and querying). */
export class StorageTimeoutError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`the database did not answer within ${timeoutMs} ms`);
    this.name = 'StorageTimeoutError';
  }
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
export class PostgresDatabase implements Database {
  readonly kind = 'postgres' as const;
  private readonly pool: pg.Pool;
  private readonly clientConfig: ClientConfig;
  private readonly schema: string | undefined;
  private readonly timeoutMs: number;
  /** Connections whose rollback failed: their state is unknown, so they are destroyed, not reused. */
  private readonly inDoubt = new WeakSet<PoolClient>();
  private closed: Promise<void> | undefined;
  /** Queries sent, for /metrics (db/costs.ts): pg sends one at a time per connection, so each is a round trip. */
  readonly costs: DbCosts = { statements: 0, roundTrips: 0 };
  /** See readVersion. */
  private latestReadVersion: number | undefined;
  private installation: string | undefined;
  private readonly repositories = new RepositoryCache<PostgresDatabase>(this, (factory, db) =>
    factory.postgres(db),
  );

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
    this.pool.on('connect', (client) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as { query: (...args: unknown[]) => unknown }).query = (...args) => {
        this.costs.statements++;
        this.costs.roundTrips++;
        return query(...args);
      };
    });
  }

  /**
   * The newest sum of `read_versions` any query of this instance has read (migration 010): it grows
   * whenever a transaction writing pets commits. Every authenticated request's key lookup reads it (see
   * accounts/repository.postgres.ts), so by the time a route runs it is at least as new as every write
   * committed before that request arrived: the exact page cache's version, without a round trip of its own.
   */
  get readVersion(): number | undefined {
    return this.latestReadVersion;
  }

  /** Records a `read_versions` sum read by a query (snapshots only move forward, so the largest is newest). */
  observeReadVersion(version: number): void {
    if (this.latestReadVersion === undefined || version > this.latestReadVersion) {
      this.latestReadVersion = version;
    }
  }

  query<R extends QueryResultRow>(config: QueryConfig): Promise<R[]> {
    return this.withClient(async (client) => (await client.query<R>(config)).rows);
  }

  execute(config: QueryConfig): Promise<number> {
    return this.withClient(async (client) => (await client.query(config)).rowCount ?? 0);
  }

  /** Runs fn in a transaction on one pooled connection; commits when it returns, rolls back when it throws. */
  transaction<T>(fn: (client: PoolClient) => Promise<T>): Promise<T> {
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
        throw translatePostgresError(error);
      },
    );
  }

  /**
   * A dedicated connection with the admin timeout for long operations (migrations, seeding), so they
   * neither trip the request timeout nor hold a pool slot that requests need.
   */
  async withAdminClient<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
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
      throw translatePostgresError(error);
    } finally {
      await client.end().catch(ignoreError);
    }
  }

  /** Advisory lock keys are per database, so they carry the schema: tenants must not block each other. */
  lockKey(purpose: string, ...parts: (string | number)[]): string {
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
      for (const migration of pendingMigrations('postgres', current)) {
        await client.query(migration.sql);
        await client.query('INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)', [
          migration.version,
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
      return { fresh: current === 0 };
    });
  }

  /** Whether the migrations have ever run here (the CLI refuses to create a database silently). */
  async isMigrated(): Promise<boolean> {
    const [row] = await this.query<{ found: boolean }>({
      text: "SELECT to_regclass('schema_migrations') IS NOT NULL AS found",
    });
    return row?.found === true;
  }

  /** The pool's connections, for /metrics: opened, idle, and callers waiting for one. */
  poolStats(): { total: number; idle: number; waiting: number } {
    return { total: this.pool.totalCount, idle: this.pool.idleCount, waiting: this.pool.waitingCount };
  }

  repository<S, P>(factory: RepositoryFactory<S, P>): P {
    return this.repositories.get<P>(factory);
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
