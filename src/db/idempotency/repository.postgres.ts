import type { PoolClient } from 'pg';
import type { PostgresDatabase } from '../postgres.js';
import {
  peekRecord,
  replayAllowed,
  type Idempotent,
  type IdempotencyInput,
  type Recorded,
} from './records.js';
import type { IdempotencyRepository } from './repository.js';

const SQL = {
  lock: 'SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0)) AS locked',
  find: `SELECT fingerprint, status, body, created_at AS "createdAt"
    FROM idempotency_keys WHERE account_id = $1 AND operation = $2 AND key = $3`,
  // Upsert: an expired record for the same key may still be there until the purge runs.
  upsert: `INSERT INTO idempotency_keys (account_id, operation, key, fingerprint, status, body, created_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7)
    ON CONFLICT (account_id, operation, key) DO UPDATE SET fingerprint = excluded.fingerprint,
      status = excluded.status, body = excluded.body, created_at = excluded.created_at`,
} as const;

export class PostgresIdempotency implements IdempotencyRepository {
  constructor(private readonly db: PostgresDatabase) {}

  /**
   * Must be called inside `db.transaction` with its client: replays or refuses a repeat, otherwise runs
   * `work` and records what `record` makes of its outcome (nothing when undefined).
   */
  async run<T>(
    client: PoolClient,
    input: IdempotencyInput,
    work: () => Promise<T>,
    record: (value: T) => Recorded | undefined,
  ): Promise<Idempotent<T>> {
    // Non-blocking: a duplicate racing the first request answers at once instead of tying up a connection
    // until the first commits. The lock is released by COMMIT/ROLLBACK, after the record below is visible,
    // so a later retry always finds it.
    const lock = await client.query<{ locked: boolean }>({
      name: 'idem_lock',
      text: SQL.lock,
      values: [this.db.lockKey('idempotency', input.accountId, input.operation, input.key)],
    });
    if (!lock.rows[0]?.locked) return { kind: 'in_progress' };

    const previous = await client.query<{
      fingerprint: string;
      status: number;
      body: string;
      createdAt: number;
    }>({ name: 'idem_find', text: SQL.find, values: [input.accountId, input.operation, input.key] });
    const row = previous.rows[0];
    if (row && row.createdAt >= input.notBefore) {
      if (row.fingerprint !== input.fingerprint) return { kind: 'mismatch' };
      const recorded = { status: row.status, body: JSON.parse(row.body) as unknown };
      if (replayAllowed(input, recorded)) return { kind: 'replayed', ...recorded };
      // This key may not see the stored answer: the request runs as if it carried no key.
      return { kind: 'done', value: await work() };
    }

    const value = await work();
    const recorded = record(value);
    if (recorded) {
      await client.query({
        name: 'idem_upsert',
        text: SQL.upsert,
        values: [
          input.accountId,
          input.operation,
          input.key,
          input.fingerprint,
          recorded.status,
          JSON.stringify(recorded.body),
          input.now,
        ],
      });
    }
    return { kind: 'done', value };
  }

  async peek(input: IdempotencyInput): ReturnType<IdempotencyRepository['peek']> {
    const rows = await this.db.query<{
      fingerprint: string;
      status: number;
      body: string;
      createdAt: number;
    }>({
      name: 'idem_peek',
      text: SQL.find,
      values: [input.accountId, input.operation, input.key],
    });
    return peekRecord(input, rows[0]);
  }

  async purge(before: number): Promise<void> {
    await this.db.execute({ text: 'DELETE FROM idempotency_keys WHERE created_at < $1', values: [before] });
  }
}
