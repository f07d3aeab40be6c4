/**
 * Within-transaction listeners: how a module lets others follow its writes in the same transaction without
 * importing them (orders and pets know nothing of applications; applications registers here when its module
 * is loaded). A module that owns such a moment makes one `TransactionListeners` and runs it inside its own
 * write, after its rows change; each listener gets the transaction's handle and may change only its own
 * module's rows (and append its events). A listener that throws fails the whole write, as any statement would.
 */
import type { PoolClient } from 'pg';
import type { PostgresDatabase } from '../db/postgres.js';
import type { SqliteDatabase } from '../db/sqlite.js';

export interface TransactionListener<C> {
  /** Synchronously, inside the write's better-sqlite3 transaction (the write lock is held). */
  sqlite(database: SqliteDatabase, changes: readonly C[]): void;
  /** On the client of the write's transaction, after the owner's row locks were taken. */
  postgres(database: PostgresDatabase, client: PoolClient, changes: readonly C[]): Promise<void>;
}

export class TransactionListeners<C> {
  private readonly listeners: TransactionListener<C>[] = [];

  /** Registering the same listener twice keeps one. */
  register(listener: TransactionListener<C>): void {
    if (!this.listeners.includes(listener)) this.listeners.push(listener);
  }

  runSqlite(database: SqliteDatabase, changes: readonly C[]): void {
    if (changes.length === 0) return;
    for (const listener of this.listeners) listener.sqlite(database, changes);
  }

  async runPostgres(database: PostgresDatabase, client: PoolClient, changes: readonly C[]): Promise<void> {
    if (changes.length === 0) return;
    for (const listener of this.listeners) await listener.postgres(database, client, changes);
  }
}
