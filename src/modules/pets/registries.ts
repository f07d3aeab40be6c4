/**
 * What other modules register with pets, run by both backends' writes inside the writing transaction: the
 * listeners that follow a pet's removal (applications closes what depended on the pet) and the holds that
 * refuse a status change or a removal (orders: an open order holds its pet). Apart from within.ts, which
 * uses the repository: the repositories run these, so this file imports nothing of theirs (no import circle).
 * Exported through index.ts; the pets module itself never imports who registers.
 */
import type { PoolClient } from 'pg';
import type { PostgresDatabase } from '../../db/postgres.js';
import type { SqliteDatabase } from '../../db/sqlite.js';
import { TransactionListeners } from '../within.js';

/** A pet removed by deletePet, inside the deleting transaction. */
export interface PetRemoval {
  petId: number;
  now: number;
}

/** Run by both backends' deletePet, after the row is gone and its event appended. */
export const petRemovals = new TransactionListeners<PetRemoval>();

/**
 * Another module's claim on pets. Each answers for many pets at once, so a turn's batch asks once: of
 * `petIds`, which it holds, reading its own rows in the pets' writing transaction.
 */
export interface PetHold {
  /** Synchronously, inside the write's better-sqlite3 transaction (the write lock is held). */
  sqlite(database: SqliteDatabase, petIds: readonly number[]): ReadonlySet<number>;
  /** On the client of the write's transaction, after the pets' row locks were taken. */
  postgres(
    database: PostgresDatabase,
    client: PoolClient,
    petIds: readonly number[],
  ): Promise<ReadonlySet<number>>;
}

export class PetHolds {
  private readonly holds: PetHold[] = [];

  /** Registering the same hold twice keeps one. */
  register(hold: PetHold): void {
    if (!this.holds.includes(hold)) this.holds.push(hold);
  }

  /** Of `petIds`, those some module holds (none asked, nothing read). */
  sqliteHeld(database: SqliteDatabase, petIds: readonly number[]): Set<number> {
    const held = new Set<number>();
    if (petIds.length === 0) return held;
    for (const hold of this.holds) for (const id of hold.sqlite(database, petIds)) held.add(id);
    return held;
  }

  async postgresHeld(
    database: PostgresDatabase,
    client: PoolClient,
    petIds: readonly number[],
  ): Promise<Set<number>> {
    const held = new Set<number>();
    if (petIds.length === 0) return held;
    for (const hold of this.holds)
      for (const id of await hold.postgres(database, client, petIds)) held.add(id);
    return held;
  }
}

/** Asked by both backends' updatePet (a status change) and deletePet, on the pets as locked. */
export const petHolds = new PetHolds();
