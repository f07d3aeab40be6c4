import type { Config } from '../config.js';
import { SqliteStorage } from './sqlite.js';
import type { Storage } from './storage.js';

/** Picks the backend from DATABASE_URL. PostgreSQL is loaded only when used. */
export async function createStorage(
  config: Pick<Config, 'databaseUrl' | 'sqliteSynchronous' | 'pgPoolSize' | 'dbTimeoutMs'>,
): Promise<Storage> {
  if (config.databaseUrl.startsWith('sqlite:')) {
    return new SqliteStorage(config.databaseUrl.slice('sqlite:'.length), {
      synchronous: config.sqliteSynchronous,
      timeoutMs: config.dbTimeoutMs,
    });
  }
  const { PostgresStorage } = await import('./postgres.js');
  const storage = new PostgresStorage(config.databaseUrl, {
    poolSize: config.pgPoolSize,
    timeoutMs: config.dbTimeoutMs,
  });
  return storage;
}
