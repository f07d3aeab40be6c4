import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import {
  INSTALLATION_MIGRATION,
  RepositoryCache,
  StorageUnavailableError,
  type Database,
  type RepositoryFactory,
} from './database.js';
import { pendingMigrations } from './migrations.js';

/** The database cannot serve this right now (locked, I/O error, disk full): a 503, not a 500. */
export function translateSqliteError(error: unknown): unknown {
  const code = (error as { code?: string } | null)?.code ?? '';
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_IOERR') || code === 'SQLITE_FULL') {
    return new StorageUnavailableError(error);
  }
  return error;
}

/** Runs synchronous database work as a promise, translating what the database throws. */
export function wrap<T>(fn: () => T): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (error) {
    return Promise.reject(translateSqliteError(error));
  }
}

/**
 * SQLite through better-sqlite3: WAL journal (readers never wait for the writer), foreign keys on,
 * every statement prepared once by the repositories. `synchronous=NORMAL` keeps commits durable across a
 * process crash; `FULL` adds an fsync per commit for power loss.
 *
 * The schema is migrated when the database opens, so the repositories can prepare their statements at
 * once; `migrate()` runs the (idempotent) migration again and reports whether this instance created it.
 */
export class SqliteDatabase implements Database {
  readonly kind = 'sqlite' as const;
  /** The connection; repositories prepare their statements on it. */
  readonly db: BetterSqlite3.Database;
  private fresh = false;
  private installation: string | undefined;
  private readonly repositories = new RepositoryCache<SqliteDatabase>(this, (factory, db) =>
    factory.sqlite(db),
  );

  constructor(path: string, options: { synchronous: 'normal' | 'full' } = { synchronous: 'normal' }) {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    this.db = new BetterSqlite3(path);
    try {
      this.db.pragma('journal_mode = WAL');
      this.db.pragma(`synchronous = ${options.synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
      this.db.pragma('foreign_keys = ON');
      this.db.pragma('busy_timeout = 5000');
      this.runMigrations();
    } catch (error) {
      this.db.close();
      throw translateSqliteError(error);
    }
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
      const record = this.db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)');
      for (const migration of pendingMigrations('sqlite', current)) {
        this.db.exec(migration.sql);
        record.run(migration.version, Date.now());
      }
      if (current < INSTALLATION_MIGRATION) {
        this.db
          .prepare('INSERT OR IGNORE INTO installation (id, installation_id, created_at) VALUES (1, ?, ?)')
          .run(randomUUID(), Date.now());
      }
    });
    migrate.immediate();
  }

  migrate(): Promise<{ fresh: boolean }> {
    return wrap(() => {
      this.runMigrations();
      return { fresh: this.fresh };
    });
  }

  repository<R>(factory: RepositoryFactory<R>): R {
    return this.repositories.get(factory);
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
