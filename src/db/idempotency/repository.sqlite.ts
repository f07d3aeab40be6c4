import type BetterSqlite3 from 'better-sqlite3';
import { runAsPromise, type SqliteDatabase } from '../sqlite.js';
import {
  peekRecord,
  replayAllowed,
  type Idempotent,
  type IdempotencyInput,
  type Recorded,
} from './records.js';
import type { IdempotencyRepository } from './repository.js';

interface Row {
  fingerprint: string;
  status: number;
  body: string;
  createdAt: number;
}

export class SqliteIdempotency implements IdempotencyRepository {
  private readonly find: BetterSqlite3.Statement<[number, string, string], Row>;
  private readonly upsert: BetterSqlite3.Statement<[number, string, string, string, number, string, number]>;
  private readonly purgeStatement: BetterSqlite3.Statement<[number]>;

  constructor(private readonly database: SqliteDatabase) {
    const { db } = database;
    this.find = db.prepare(
      `SELECT fingerprint, status, body, created_at AS createdAt FROM idempotency_keys
       WHERE account_id = ? AND operation = ? AND key = ?`,
    );
    // Upsert: an expired record for the same key may still be there until the purge runs.
    this.upsert = db.prepare(
      `INSERT INTO idempotency_keys (account_id, operation, key, fingerprint, status, body, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (account_id, operation, key) DO UPDATE SET fingerprint = excluded.fingerprint,
         status = excluded.status, body = excluded.body, created_at = excluded.created_at`,
    );
    this.purgeStatement = db.prepare('DELETE FROM idempotency_keys WHERE created_at < ?');
  }

  /**
   * Must be called inside a transaction (better-sqlite3's, which serialises writers): replays or refuses a
   * repeat, otherwise runs `work` and records what `record` makes of its outcome (nothing when undefined).
   * Writes are serialised, so the in-progress case never arises on SQLite.
   */
  run<T>(
    given: IdempotencyInput | undefined,
    work: () => T,
    record: (value: T) => Recorded | undefined,
  ): Idempotent<T> {
    let input = given;
    if (input) {
      const previous = this.find.get(input.accountId, input.operation, input.key);
      if (previous && previous.createdAt >= input.notBefore) {
        if (previous.fingerprint !== input.fingerprint) return { kind: 'mismatch' };
        const recorded = { status: previous.status, body: JSON.parse(previous.body) as unknown };
        if (replayAllowed(input, recorded)) return { kind: 'replayed', ...recorded };
        // This key may not see the stored answer: the request runs as if it carried no key.
        input = undefined;
      }
    }
    const value = work();
    const recorded = input && record(value);
    if (input && recorded) {
      this.upsert.run(
        input.accountId,
        input.operation,
        input.key,
        input.fingerprint,
        recorded.status,
        JSON.stringify(recorded.body),
        input.now,
      );
    }
    return { kind: 'done', value };
  }

  peek(input: IdempotencyInput): ReturnType<IdempotencyRepository['peek']> {
    return runAsPromise(() => peekRecord(input, this.find.get(input.accountId, input.operation, input.key)));
  }

  purge(before: number): Promise<void> {
    return this.database.write(() => {
      this.purgeStatement.run(before);
    });
  }
}
