/**
 * What other modules may read and change of pets inside their own transaction, on its handle (applications:
 * is the pet there, and holding its row lock so an approval, a delivery and a removal of one pet serialise;
 * orders: a placement holds the pet, an action moves it, the inventory counts pets), so no other module
 * names the pets table. The registries other modules join (registries.ts) are exported with it through
 * index.ts; the pets module itself never imports who registers.
 */
import type { PoolClient } from 'pg';
import type { PostgresDatabase } from '../../db/postgres.js';
import type { SqliteDatabase } from '../../db/sqlite.js';
import { lockInIdOrder } from './batched-writes.postgres.js';
import { petRepository } from './repository.js';
import type { SqlitePetRepository } from './repository.sqlite.js';
import type { Pet, PetStatus } from './schemas.js';

export { petHolds, petRemovals, type PetHold, type PetRemoval } from './registries.js';

/** A pet with its version, as a write of another module reads (and locks) it. */
export type PetRow = Pet & { version: number };
/** A pet as another module's write moved it, with the status it had before. */
export type MovedPetRow = PetRow & { previousStatus: PetStatus };

const sqlite = (database: SqliteDatabase) => database.repository(petRepository) as SqlitePetRepository;

const SQL = {
  // On rows the caller locked with postgresLockRows (their versions were decided on them).
  writeStatuses: `UPDATE pets p SET status = u.status, version = u.version
    FROM unnest($1::bigint[], $2::text[], $3::bigint[]) AS u(id, status, version) WHERE p.id = u.id`,
  countByStatus: 'SELECT status, count(*)::int AS n FROM pets GROUP BY status',
} as const;

export const petsWithin = {
  /** The pet's status, inside a SQLite write (the write lock is held); undefined: no such pet. */
  sqliteStatus(database: SqliteDatabase, petId: number): PetStatus | undefined {
    return sqlite(database).statusWithin(petId);
  },
  /**
   * Inside a SQLite write: the pet moves to `to` (version + 1), only from `from` when given. The pet as
   * moved, or undefined: no such pet (or not in `from`).
   */
  sqliteMove(
    database: SqliteDatabase,
    petId: number,
    to: PetStatus,
    from?: PetStatus,
  ): MovedPetRow | undefined {
    return sqlite(database).moveWithin(petId, to, from);
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
  /** Locks the pets for update (in id order) and returns them whole, by id; a missing pet is absent. */
  async postgresLockRows(client: PoolClient, petIds: readonly number[]): Promise<Map<number, PetRow>> {
    const locked = await lockInIdOrder(client, petIds);
    return new Map([...locked].map(([id, { pet, version }]) => [id, { ...pet, version }]));
  },
  /**
   * Writes the statuses and versions the caller decided on the rows it locked with postgresLockRows (a
   * version one more per move: a turn's batch may move one pet twice), in one statement.
   */
  async postgresWriteStatuses(client: PoolClient, rows: readonly PetRow[]): Promise<void> {
    if (rows.length === 0) return;
    const sorted = [...rows].sort((a, b) => a.id - b.id);
    await client.query({
      name: 'pets_within_write_statuses',
      text: SQL.writeStatuses,
      values: [sorted.map((r) => r.id), sorted.map((r) => r.status), sorted.map((r) => r.version)],
    });
  },
  /** How many pets are in each status (the statuses no pet is in are absent). */
  sqliteCountByStatus(database: SqliteDatabase): Promise<Map<PetStatus, number>> {
    return sqlite(database).countByStatus();
  },
  async postgresCountByStatus(db: PostgresDatabase): Promise<Map<PetStatus, number>> {
    const rows = await db.query<{ status: PetStatus; n: number }>({
      name: 'pets_count_by_status',
      text: SQL.countByStatus,
    });
    return new Map(rows.map(({ status, n }) => [status, n]));
  },
};
