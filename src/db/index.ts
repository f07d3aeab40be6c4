import type { Config } from '../config.js';
import type { Database } from './database.js';
import { SqliteDatabase } from './sqlite.js';

/** Picks the backend from DATABASE_URL. PostgreSQL is loaded only when used. */
export async function openDatabase(
  config: Pick<Config, 'databaseUrl' | 'sqliteSynchronous' | 'pgPoolSize' | 'dbTimeoutMs'>,
): Promise<Database> {
  if (config.databaseUrl.startsWith('sqlite:')) {
    return new SqliteDatabase(config.databaseUrl.slice('sqlite:'.length), {
      synchronous: config.sqliteSynchronous,
      timeoutMs: config.dbTimeoutMs,
    });
  }
  const { PostgresDatabase } = await import('./postgres.js');
  return new PostgresDatabase(config.databaseUrl, {
    poolSize: config.pgPoolSize,
    timeoutMs: config.dbTimeoutMs,
  });
}
