import type { RepositoryFactory } from '../database.js';
import type { Idempotent, IdempotencyInput } from './records.js';
import { PostgresIdempotency } from './repository.postgres.js';
import { SqliteIdempotency } from './repository.sqlite.js';

/**
 * Where idempotency records live. Writes go through the backend's `run` (see its class), called by a
 * module's repository inside the transaction of the write; this interface is what the rest needs.
 *
 * Contract (test/contracts/idempotency.contract.test.ts): at most one write per (account, operation, key) within the
 * retention window; a record is stored only for a write that succeeded.
 */
export interface IdempotencyRepository {
  /**
   * What a repeat of `input` would come to, read before the work: its replay, a mismatch, or undefined
   * (nothing recorded, or not for this caller: the write must run). For writes whose preparation is dear
   * (an image's decode), so a replay costs a lookup; the write's transaction decides again.
   */
  peek(
    input: IdempotencyInput,
  ): Promise<Extract<Idempotent<never>, { kind: 'replayed' | 'mismatch' }> | undefined>;
  /** Delete records created before `before` (epoch ms). */
  purge(before: number): Promise<void>;
}

export const idempotencyRepository: RepositoryFactory<SqliteIdempotency, PostgresIdempotency> = {
  sqlite: (db) => new SqliteIdempotency(db),
  postgres: (db) => new PostgresIdempotency(db),
};
