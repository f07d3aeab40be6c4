/**
 * Secrets every instance on one database shares (`service_secrets`, migration 023): the first instance that
 * asks for one makes it (32 random bytes) and the others, then and later, read the same. Two instances asking
 * at once both insert-if-absent and read back the one row that won.
 */
import { randomBytes } from 'node:crypto';
import type { RepositoryFactory } from './database.js';

export interface SecretStore {
  /** The secret called `name` (32 bytes or more), made now if there is none yet. */
  get(name: string): Promise<Buffer>;
}

const fresh = (): string => randomBytes(32).toString('hex');

export const secretStore: RepositoryFactory<SecretStore> = {
  sqlite: (database) => ({
    async get(name) {
      const insert = database.db.prepare(
        'INSERT OR IGNORE INTO service_secrets (name, secret, created_at) VALUES (?, ?, ?)',
      );
      await database.write(() => insert.run(name, fresh(), Date.now()));
      const row = database.db
        .prepare<[string], { secret: string }>('SELECT secret FROM service_secrets WHERE name = ?')
        .get(name);
      return Buffer.from(row!.secret, 'hex');
    },
  }),
  postgres: (database) => ({
    async get(name) {
      await database.execute({
        text: 'INSERT INTO service_secrets (name, secret, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING',
        values: [name, fresh(), Date.now()],
      });
      const [row] = await database.query<{ secret: string }>({
        text: 'SELECT secret FROM service_secrets WHERE name = $1',
        values: [name],
      });
      return Buffer.from(row!.secret, 'hex');
    },
  }),
};
