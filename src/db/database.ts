/**
 * The database as the rest of the code sees it: connections and their lifecycle (migrate, ping, close),
 * and the repositories of the modules. It knows no table: each module brings a narrow repository
 * interface and one implementation per backend (`src/modules/<resource>/repository*.ts`), and asks the
 * database for its instance with `database.repository(factory)`.
 */
import type { DbCosts } from './costs.js';
import type { PostgresDatabase } from './postgres.js';
import type { SqliteDatabase } from './sqlite.js';

export type Backend = 'sqlite' | 'postgres';

/**
 * How a module builds its repository on each backend. Only types of the connections are imported here,
 * so a SQLite deployment never loads `pg`. `S` and `P` differ where a repository also offers what only one
 * backend has (e.g. appending inside that backend's transaction), so a caller on that backend gets it typed.
 */
export interface RepositoryFactory<S, P = S> {
  sqlite(db: SqliteDatabase): S;
  postgres(db: PostgresDatabase): P;
}

/**
 * Lifecycle contract, held by test/contracts/database.contract.test.ts on every backend:
 * - `migrate()` applies pending migrations (src/db/migrations/<backend>/NNN_name.sql); safe to call
 *   concurrently from several processes; refuses a database whose schema is newer than the newest migration
 *   this release knows. `fresh` is true when this instance created the schema (the server then prints how
 *   to create the first key).
 * - Errors reaching the database reject with `StorageUnavailableError`; nothing else is thrown for
 *   well-formed input. Every write is atomic and durable once its promise resolves.
 * - `repository(factory)` returns one instance per factory for the life of the database.
 */
export interface Database {
  readonly kind: Backend;
  /** Statements and round trips sent so far, for /metrics (see db/costs.ts). */
  readonly costs: DbCosts;
  migrate(): Promise<{ fresh: boolean }>;
  repository<S, P>(factory: RepositoryFactory<S, P>): S | P;
  /**
   * A random id (a UUID) written once, by the migration that creates this database, and never changed.
   * The Redis counter store namespaces every key by it, so two deployments that share a Redis (production
   * and staging, whatever REDIS_PREFIX says) never share counts or bans, while instances on one database do.
   */
  installationId(): Promise<string>;
  ping(): Promise<void>;
  close(): Promise<void>;
  /** The connection pool's state for /metrics; absent where there is no pool (SQLite). */
  poolStats?(): { total: number; idle: number; waiting: number };
}

/** The migration creating the `installation` table, whose one row the runner inserts right after it. */
export const INSTALLATION_MIGRATION = 2;

/** The database could not be reached or timed out; the API answers 503. */
export class StorageUnavailableError extends Error {
  constructor(cause?: unknown) {
    super('storage unavailable', { cause });
    this.name = 'StorageUnavailableError';
  }
}

/** One repository per factory and database; shared by both backends' Database classes. */
export class RepositoryCache<Db> {
  private readonly instances = new Map<RepositoryFactory<unknown, unknown>, unknown>();
  constructor(
    private readonly db: Db,
    private readonly build: (factory: RepositoryFactory<unknown, unknown>, db: Db) => unknown,
  ) {}

  /** `R`: what the factory builds on this cache's backend. */
  get<R>(factory: RepositoryFactory<unknown, unknown>): R {
    let instance = this.instances.get(factory);
    if (instance === undefined) {
      instance = this.build(factory, this.db);
      this.instances.set(factory, instance);
    }
    return instance as R;
  }
}
