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
import { pendingMigrations } from './migrations.js';

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

export function translatePostgresError(error: unknown): unknown {
  return error instanceof StorageUnavailableError || !isUnavailable(error)
    ? error
    : new StorageUnavailableError(error);
}

export function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** Errors on connections we are not currently awaiting are reported by the next query; never crash. */
const ignoreError = (): void => {};

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

/**
 * PostgreSQL through a bounded `pg` pool. Every request-path query is bounded three ways: waiting for a
 * connection (connectionTimeoutMillis), server-side execution (statement_timeout) and, as a backstop for a
 * silent network, the client-side read (query_timeout). All of them surface as StorageUnavailableError.
 *
 * `?schema=NAME` in the URL confines every connection to that schema, so several deployments (or test runs)
 * can share one database.
 */
export class PostgresDatabase implements Database {
  readonly kind = 'postgres' as const;
  private readonly pool: pg.Pool;
  private readonly clientConfig: ClientConfig;
  private readonly schema: string | undefined;
  private closed: Promise<void> | undefined;
  private installation: string | undefined;
  private readonly repositories = new RepositoryCache<PostgresDatabase>(this, (factory, db) =>
    factory.postgres(db),
  );

  constructor(url: string, options: { poolSize: number; timeoutMs: number }) {
    const parsed = parseUrl(url);
    this.schema = parsed.schema;
    this.clientConfig = {
      connectionString: parsed.connectionString,
      ...(parsed.options === undefined ? {} : { options: parsed.options }),
      connectionTimeoutMillis: options.timeoutMs,
      statement_timeout: options.timeoutMs,
      // The server cancels at statement_timeout and tells us; this only fires when it cannot (network gone).
      query_timeout: options.timeoutMs + 1_000,
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

  async query<R extends QueryResultRow>(config: QueryConfig): Promise<R[]> {
    try {
      return (await this.pool.query<R>(config)).rows;
    } catch (error) {
      throw translatePostgresError(error);
    }
  }

  async execute(config: QueryConfig): Promise<number> {
    try {
      return (await this.pool.query(config)).rowCount ?? 0;
    } catch (error) {
      throw translatePostgresError(error);
    }
  }

  /** Runs fn in a transaction on one pooled connection; commits when it returns, rolls back when it throws. */
  async transaction<T>(fn: (client: PoolClient) => Promise<T>): Promise<T> {
    let client: PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw translatePostgresError(error);
    }
    // pg-pool removes its error listener while a connection is checked out; a connection dropped between
    // two of our queries would otherwise emit an unhandled 'error'. The failing query reports it anyway.
    client.on('error', ignoreError);
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      broken = await this.rollback(client, error);
      throw translatePostgresError(error);
    } finally {
      client.off('error', ignoreError);
      // Passing an error makes the pool destroy the connection instead of reusing one in an unknown state.
      client.release(broken);
    }
  }

  /** Returns an error when the connection must be discarded. */
  private async rollback(client: PoolClient, error: unknown): Promise<Error | undefined> {
    // A lost or timed-out connection cannot roll back; the server aborts the transaction when it goes.
    if (isUnavailable(error)) return error instanceof Error ? error : new Error(String(error));
    try {
      await client.query('ROLLBACK');
      return undefined;
    } catch (rollbackError) {
      return rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
    }
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

  repository<R>(factory: RepositoryFactory<R>): R {
    return this.repositories.get(factory);
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
