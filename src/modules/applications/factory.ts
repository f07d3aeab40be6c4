/** The store for a database's backend (`database.repository(applicationStore)`). */
import type { RepositoryFactory } from '../../db/database.js';
import type { ApplicationStore } from './store.js';
import { PostgresApplicationStore } from './store.postgres.js';
import { SqliteApplicationStore } from './store.sqlite.js';

export const applicationStore: RepositoryFactory<ApplicationStore> = {
  sqlite: (db) => new SqliteApplicationStore(db),
  postgres: (db) => new PostgresApplicationStore(db),
};
