/**
 * SQL run straight against a backend's tables, for suites that simulate data an older release left behind
 * (rows no write path of this release would produce) or that call the database's own functions.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { Database } from '../../src/db/database.js';
import { PostgresDatabase } from '../../src/db/postgres.js';
import { SqliteDatabase } from '../../src/db/sqlite.js';

/** Runs `sql` with `?` placeholders (numbered `$n` on PostgreSQL); returns the rows it answers. */
export async function rawQuery<R>(database: Database, sql: string, values: unknown[] = []): Promise<R[]> {
  if (database instanceof SqliteDatabase) {
    const statement = database.db.prepare(sql);
    return statement.reader ? (statement.all(...values) as R[]) : (statement.run(...values), []);
  }
  if (database instanceof PostgresDatabase) {
    let n = 0;
    const text = sql.replace(/\?/g, () => `$${++n}`);
    return (await database.query({ text, values })) as unknown as R[];
  }
  assert.fail('unknown database');
}

/** Runs a migration file of this release again, as it ran on a database holding the rows present now. */
export async function rerunMigration(database: Database, file: string): Promise<void> {
  if (database instanceof SqliteDatabase) {
    database.db.exec(
      readFileSync(new URL(`../../src/db/migrations/sqlite/${file}`, import.meta.url), 'utf8'),
    );
  } else if (database instanceof PostgresDatabase) {
    const text = readFileSync(new URL(`../../src/db/migrations/postgres/${file}`, import.meta.url), 'utf8');
    await database.execute({ text });
  } else assert.fail('unknown database');
}

export function backendOf(database: Database): 'sqlite' | 'postgres' {
  return database instanceof SqliteDatabase ? 'sqlite' : 'postgres';
}
