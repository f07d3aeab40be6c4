/**
 * Order rows written straight into the orders table, for suites that need a pet with an open (or past)
 * order without going through the orders module.
 */
import assert from 'node:assert/strict';
import type { Database } from '../../src/db/database.js';
import { PostgresDatabase } from '../../src/db/postgres.js';
import { SqliteDatabase } from '../../src/db/sqlite.js';

export async function insertOrderRow(
  database: Database,
  row: {
    accountId: number;
    petId: number;
    status: 'placed' | 'approved' | 'delivered' | 'cancelled';
    now: number;
  },
): Promise<void> {
  const values = [row.accountId, row.petId, row.status, row.now];
  const sql = 'INSERT INTO orders (account_id, pet_id, status, created_at, updated_at) VALUES';
  if (database instanceof SqliteDatabase) {
    database.db.prepare(`${sql} (?, ?, ?, ?, ?)`).run(...values, row.now);
  } else if (database instanceof PostgresDatabase) {
    await database.execute({ text: `${sql} ($1, $2, $3, $4, $4)`, values });
  } else assert.fail('unknown database');
}
