/**
 * Migrations are numbered SQL files per backend: `src/db/migrations/<backend>/NNN_name.sql`, applied in
 * order, each once, recorded in `schema_migrations (version, applied_at)`. The build copies them to
 * `dist/db/migrations`, so they are found next to this module whether it runs from src (tsx) or dist.
 *
 * Why our own runner and not postgrator or umzug: both backends need the whole run in one transaction held
 * under a cross-process lock (SQLite: one synchronous `BEGIN IMMEDIATE`; PostgreSQL: a transaction-scoped
 * advisory lock on a dedicated connection with the admin timeout), together with the refusal of a newer
 * schema, and existing databases already record their version in `schema_migrations`. postgrator keeps its
 * own `schemaversion` table (with checksums) and drives an asynchronous query function, which cannot hold
 * better-sqlite3's synchronous transaction; umzug only sequences callbacks and leaves locking, storage and
 * SQL files to us. What remains to write is the ordering and the version check below.
 */
import { readdirSync, readFileSync } from 'node:fs';
import type { Backend } from './database.js';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

const FILE = /^(\d{3})_([a-z0-9_]+)\.sql$/;

const loaded = new Map<Backend, Migration[]>();

/** The migrations of a backend, in order; their numbers must run 1, 2, 3… without gaps. */
export function migrationsFor(backend: Backend): Migration[] {
  let migrations = loaded.get(backend);
  if (migrations) return migrations;
  const dir = new URL(`./migrations/${backend}/`, import.meta.url);
  migrations = readdirSync(dir)
    .filter((file) => file.endsWith('.sql'))
    .sort()
    .map((file, i) => {
      const match = FILE.exec(file);
      if (!match || Number(match[1]) !== i + 1) {
        throw new Error(`migration ${backend}/${file}: expected ${String(i + 1).padStart(3, '0')}_name.sql`);
      }
      return { version: i + 1, name: match[2]!, sql: readFileSync(new URL(file, dir), 'utf8') };
    });
  loaded.set(backend, migrations);
  return migrations;
}

/** A database migrated by a newer release may hold data this one would misread: refuse to start. */
export function assertNotNewer(backend: Backend, current: number): void {
  const newest = migrationsFor(backend).length;
  if (current > newest) {
    throw new Error(
      `database schema version ${current} is newer than this release supports (${newest}); upgrade the service`,
    );
  }
}

/** The migrations after `current`. */
export function pendingMigrations(backend: Backend, current: number): Migration[] {
  assertNotNewer(backend, current);
  return migrationsFor(backend).slice(current);
}
