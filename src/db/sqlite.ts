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
import { countSqliteStatements, type DbCosts } from './costs.js';
import { foldText } from './fold.js';
import { wellFormedJsonText } from './well-formed-json.js';
import { pendingMigrations } from './migrations.js';
import { settle, TurnBatch, type Settled } from './turn-batch.js';
import { bindToCaller, tracingOn } from '../telemetry/context.js';
import { describeStatement, traced } from './sqlite-tracing.js';

/** The database cannot serve this right now (locked, I/O error, disk full): a 503, not a 500. */
export function translateSqliteError(error: unknown): unknown {
  const code = (error as { code?: string } | null)?.code ?? '';
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_IOERR') || code === 'SQLITE_FULL') {
    return new StorageUnavailableError(error);
  }
  return error;
}

/** Runs synchronous database work as a promise, translating what the database throws. */
export function runAsPromise<T>(fn: () => T): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (error) {
    return Promise.reject(translateSqliteError(error));
  }
}

/** A statement's runs as spans of the request running them (sqlite-tracing.ts). */
function traceStatement(sql: string): (execute: () => unknown) => unknown {
  const description = describeStatement(sql);
  return (execute) => traced(description, execute);
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
  /** Called each time a write finds the write lock held by another connection and will try again. */
  onBusy?: (attempt: number) => void;
  /** Called when a write of a group commit threw and the batch runs again with a savepoint per write. */
  onBatchRetry?: (error: unknown) => void;
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
  readonly hooks: SqliteHooks = {};
  /** Statements run, for /metrics (db/costs.ts); SQLite is in-process, so no round trips. */
  readonly costs: DbCosts = { statements: 0, roundTrips: 0 };
  private readonly timeoutMs: number;
  private fresh = false;
  private installation: string | undefined;
  private readonly repositories = new RepositoryCache<SqliteDatabase>(this, (factory, db) =>
    factory.sqlite(db),
  );
  /** The writes of one event-loop turn, committed together; see writeInTurn. */
  private readonly turnWrites: TurnBatch<() => unknown, unknown>;
  /** See observeReadVersion. */
  private latestReadVersion: string | undefined;
  private readonly versionStatement: BetterSqlite3.Statement<[], [number, number]>;

  /**
   * @param options.timeoutMs how long a write keeps trying while another connection (a CLI command, a second
   *   instance) holds the write lock, before it fails with StorageUnavailableError (DB_TIMEOUT_MS).
   */
  constructor(path: string, options: { synchronous?: 'normal' | 'full'; timeoutMs?: number } = {}) {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    this.timeoutMs = options.timeoutMs ?? 2_000;
    this.db = new BetterSqlite3(path);
    // Tracing starts before the database opens (cli/serve.ts), so the choice is made once, here.
    countSqliteStatements(this.db, this.costs, tracingOn() ? traceStatement : undefined);
    try {
      // Opening and migrating may wait for another process's migration, before anything else runs.
      this.db.pragma(`busy_timeout = ${STARTUP_BUSY_WAIT_MS}`);
      this.db.pragma('journal_mode = WAL');
      this.db.pragma(`synchronous = ${options.synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
      this.db.pragma('foreign_keys = ON');
      // Deleted means gone: freed pages (a deleted photo's bytes, an erased person's fields) are zeroed, and
      // the WAL is cut back to nothing whenever a checkpoint restarts it, so no old frame lingers there.
      this.db.pragma('secure_delete = ON');
      this.db.pragma('journal_size_limit = 0');
      this.db.pragma('cache_size = -16384');
      // The word index's triggers (and the migration that builds it) fold text with the search's own folding.
      this.db.function('catalogue_fold', { deterministic: true }, (text: unknown) =>
        typeof text === 'string' ? foldText(text) : text,
      );
      // Migration 021 repairs stored JSON documents with it.
      this.db.function('well_formed_json', { deterministic: true }, (text: unknown) =>
        typeof text === 'string' ? wellFormedJsonText(text) : text,
      );
      this.runMigrations();
      this.db.pragma(`busy_timeout = ${SQLITE_BUSY_WAIT_MS}`);
    } catch (error) {
      this.db.close();
      throw translateSqliteError(error);
    }
    this.turnWrites = this.groupCommit();
    // Changes committed by other connections move data_version; this connection's own (every write path,
    // whatever its table) move total_changes(). Together they change whenever a page could have.
    this.versionStatement = this.db
      .prepare<[], [number, number]>('SELECT data_version, total_changes() FROM pragma_data_version()')
      .raw(true);
  }

  /**
   * Reads the database's version now, remembers it as readVersion, and returns its `data_version` part.
   * Every authenticated request's key lookup calls it once per turn, after every request of the turn has
   * arrived (accounts/repository.sqlite.ts), so by the time a route runs, readVersion is at least as new as
   * every write committed before that request arrived: the exact page cache's version (http/page-cache.ts),
   * without a statement per request. Mirrors PostgresDatabase.readVersion.
   */
  observeReadVersion(): number {
    const [data, own] = this.versionStatement.get()!;
    this.latestReadVersion = `${data}:${own}`;
    return data;
  }

  /** The version last read by observeReadVersion; never newer than the data a later read sees. */
  get readVersion(): string | undefined {
    return this.latestReadVersion;
  }

  /**
   * One transaction for every write of a turn; a write that throws is rolled back alone (under its own
   * SAVEPOINT, a nested better-sqlite3 transaction, when the batch runs again) and the others still commit. BEGIN IMMEDIATE takes
   * the write lock before anything is read, so a busy database is found at the start of the batch, where
   * the whole batch is retried (the writes are plain functions of their inputs), not after reads.
   */
  private groupCommit(): TurnBatch<() => unknown, unknown> {
    const db = this.db;
    const savepoint = db.transaction((write: () => unknown) => write());
    const commit = db.transaction((batch: (() => unknown)[]) => {
      const outcomes: Settled<unknown>[] = [];
      for (const write of batch) {
        const outcome = settle(() => savepoint(write));
        // Some errors (I/O error, disk full, out of memory) make SQLite roll the whole transaction back:
        // the batch's earlier writes are gone with it, and the next savepoint would silently become a
        // transaction of its own. Every caller of the batch fails instead.
        if (!db.inTransaction) {
          throw new StorageUnavailableError('error' in outcome ? outcome.error : undefined);
        }
        outcomes.push(outcome);
      }
      return outcomes;
    });
    // First without a savepoint per write (SAVEPOINT and RELEASE are two statements more per write, a good
    // part of a small write's cost). A write that throws aborts that attempt: the batch is rolled back and
    // run again with savepoints, the thrown write not run again but failed with its error, so it fails
    // alone. The others are plain functions of their inputs (see above), so running them again is safe.
    let running = -1;
    const together = db.transaction((batch: (() => unknown)[]) => {
      const outcomes = batch.map((write, i) => {
        running = i;
        const value = write();
        if (!db.inTransaction) {
          // SQLite rolled the whole transaction back under the write (as on an I/O error): every caller
          // fails, as in the batch with savepoints below.
          running = -1;
          throw new StorageUnavailableError(undefined);
        }
        return { value };
      });
      running = -1;
      return outcomes;
    });
    return new TurnBatch(
      (batch) =>
        this.withWriteLock(() => {
          running = -1;
          try {
            return together.immediate(batch);
          } catch (error) {
            // Busy at BEGIN: retried whole by withWriteLock. Thrown outside any write (at COMMIT): every
            // caller fails, as a batch that cannot commit.
            const thrower = running;
            if (isBusy(error) || !db.open || thrower === -1) throw error;
            this.hooks.onBatchRetry?.(error);
            return commit.immediate(
              batch.map((write, i) =>
                i === thrower
                  ? () => {
                      throw error;
                    }
                  : write,
              ),
            );
          }
        }),
      translateSqliteError,
    );
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
   * Writes should take the lock up front (`transaction.immediate`), so a busy database is found before
   * anything is read, where a retry of the whole is safe.
   */
  withWriteLock<T>(fn: () => T): T | Promise<T> {
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
  write<T>(fn: () => T): Promise<T> {
    try {
      return Promise.resolve(this.withWriteLock(fn)).catch((error: unknown) => {
        throw translateSqliteError(error);
      });
    } catch (error) {
      return Promise.reject(translateSqliteError(error));
    }
  }

  /**
   * Group commit: a write (a function doing its reads and writes synchronously on `db`, all or nothing)
   * queued with the other writes of this event-loop turn and run at its end, in arrival order, in one
   * transaction; the promise settles only after that transaction has committed (or failed), so every
   * acknowledged write is as durable as one committed alone. The commit's fixed cost (the lock, the WAL
   * frames of the same table and index pages, the sync) is paid once per turn instead of once per request.
   * Each write sees the ones before it in the batch, exactly as if they had committed one by one; a quiet
   * server commits each write alone, one turn later.
   */
  writeInTurn<T>(write: () => T): Promise<T> {
    // Run in the caller's trace context, not the batch's first caller's (an event stores it).
    return this.turnWrites.add(bindToCaller(write)) as Promise<T>;
  }

  repository<S, P>(factory: RepositoryFactory<S, P>): S {
    return this.repositories.get<S>(factory);
  }

  installationId(): Promise<string> {
    return runAsPromise(
      () =>
        (this.installation ??= this.db
          .prepare<[], string>('SELECT installation_id FROM installation WHERE id = 1')
          .pluck(true)
          .get()!),
    );
  }

  ping(): Promise<void> {
    return runAsPromise(() => {
      this.db.prepare('SELECT 1').get();
    });
  }

  close(): Promise<void> {
    if (this.db.open) this.db.close();
    return Promise.resolve();
  }
}
