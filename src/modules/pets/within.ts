/**
 * What other modules may ask of pets inside their own transaction (applications: is the pet there, and
 * holding its row lock so an approval, a delivery and a removal of one pet serialise), and the listeners
 * that follow a pet's removal in the removing transaction (applications closes what depended on the pet).
 * Exported through index.ts; the pets module itself never imports its listeners.
 */
import type BetterSqlite3 from 'better-sqlite3';
import type { PoolClient } from 'pg';
import type { SqliteDatabase } from '../../db/sqlite.js';
import { TransactionListeners } from '../within.js';
import type { PetStatus } from './schemas.js';

/** A pet removed by deletePet, inside the deleting transaction. */
export interface PetRemoval {
  petId: number;
  now: number;
}

/** Run by both backends' deletePet, after the row is gone and its event appended. */
export const petRemovals = new TransactionListeners<PetRemoval>();

const statusStatements = new WeakMap<SqliteDatabase, BetterSqlite3.Statement<[number], PetStatus>>();

export const petsWithin = {
  /** The pet's status, inside a SQLite write (the write lock is held); undefined: no such pet. */
  sqliteStatus(database: SqliteDatabase, petId: number): PetStatus | undefined {
    let statement = statusStatements.get(database);
    if (!statement) {
      // Prepared once per database: preparing costs more than the lookup (every submission asks).
      statement = database.db
        .prepare<[number], PetStatus>('SELECT status FROM pets WHERE id = ?')
        .pluck(true);
      statusStatements.set(database, statement);
    }
    return statement.get(petId);
  },
  /**
   * Locks the pets (in id order, as every writer of pets does) and returns their statuses; `share` lets
   * other share lockers through and still waits for (and blocks) a change or a removal.
   */
  async postgresLock(
    client: PoolClient,
    petIds: readonly number[],
    mode: 'share' | 'update',
  ): Promise<Map<number, PetStatus>> {
    const { rows } = await client.query<{ id: string | number; status: PetStatus }>({
      name: `pets_within_lock_${mode}`,
      text: `SELECT id, status FROM pets WHERE id = ANY($1::bigint[]) ORDER BY id FOR ${mode === 'share' ? 'SHARE' : 'UPDATE'}`,
      values: [[...new Set(petIds)].sort((a, b) => a - b)],
    });
    return new Map(rows.map((row) => [Number(row.id), row.status]));
  },
};
