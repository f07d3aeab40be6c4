import type BetterSqlite3 from 'better-sqlite3';
import { runAsPromise, type SqliteDatabase } from '../../db/sqlite.js';
import { settleIdempotent, type IdempotencyInput } from '../../db/idempotency/records.js';
import { idempotencyRepository } from '../../db/idempotency/repository.js';
import type { SqliteIdempotency } from '../../db/idempotency/repository.sqlite.js';
import { eventRepository, type SqliteEventAppender } from '../events/index.js';
import type {
  ProfileDoc,
  ProfileRecord,
  ProfileRepository,
  ProfileWrite,
  ProfileWriteResult,
} from './repository.js';
import { profileWrite, recordOf, searchColumns, searchValues } from './decisions.js';

type Row = { doc: string | null; version: number | null; updatedAt: number | null };

const sqliteValue = (v: string | number | boolean | null) => (typeof v === 'boolean' ? Number(v) : v);

/** Writes run in the turn's group commit (SqliteDatabase.writeInTurn), under the write lock. */
export class SqliteProfileRepository implements ProfileRepository {
  private readonly idempotency: SqliteIdempotency;
  private readonly events: SqliteEventAppender;
  private readonly read: BetterSqlite3.Statement<[number], Row>;
  private readonly upsert: BetterSqlite3.Statement<unknown[]>;
  private readonly insertFirst: BetterSqlite3.Statement<unknown[]>;

  constructor(private readonly database: SqliteDatabase) {
    const db = database.db;
    this.idempotency = database.repository(idempotencyRepository);
    this.events = database.repository(eventRepository);
    // One row for a pet: its profile's columns, all null when it has none.
    this.read = db.prepare(
      `SELECT pr.doc, pr.version, pr.updated_at AS updatedAt FROM pets p
       LEFT JOIN pet_profiles pr ON pr.pet_id = p.id WHERE p.id = ?`,
    );
    const columns = ['pet_id', 'doc', 'version', 'updated_at', ...searchColumns()];
    this.upsert = db.prepare(
      `INSERT INTO pet_profiles (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})
       ON CONFLICT (pet_id) DO UPDATE SET ${columns
         .slice(1)
         .map((c) => `${c} = excluded.${c}`)
         .join(', ')}`,
    );
    // The seed's: a profile already there stays (see ProfileRepository.seed).
    this.insertFirst = db.prepare(
      `INSERT INTO pet_profiles (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})
       ON CONFLICT (pet_id) DO NOTHING`,
    );
  }

  get(petId: number): Promise<ProfileRecord | undefined> {
    return runAsPromise(() => toRecord(this.read.get(petId)));
  }

  write(input: ProfileWrite, idempotency?: IdempotencyInput): Promise<ProfileWriteResult> {
    return this.database.writeInTurn(() =>
      settleIdempotent(this.idempotency.run(idempotency, () => this.writeNow(input), recordOf)),
    );
  }

  async seed(profiles: { petId: number; doc: ProfileDoc }[], now: number): Promise<void> {
    const batch = this.database.db.transaction((rows: typeof profiles) => {
      for (const { petId, doc } of rows) {
        this.insertFirst.run(petId, JSON.stringify(doc), 1, now, ...searchValues(doc).map(sqliteValue));
      }
    });
    // Chunk by chunk, each its own transaction: the server's writes get the lock in between.
    for (let i = 0; i < profiles.length; i += 10_000) {
      await this.database.write(() => batch.immediate(profiles.slice(i, i + 10_000)));
    }
  }

  private writeNow(input: ProfileWrite): ProfileWriteResult {
    const current = toRecord(this.read.get(input.petId));
    const write = profileWrite(current, input);
    if (write.kind !== 'store') return write;
    const { record, event } = write;
    this.upsert.run(
      input.petId,
      JSON.stringify(record.doc),
      record.version,
      input.now,
      ...searchValues(record.doc).map(sqliteValue),
    );
    this.events.append(event);
    return { kind: 'done', record };
  }
}

function toRecord(row: Row | undefined): ProfileRecord | undefined {
  if (!row) return undefined;
  if (row.doc === null) return { doc: {}, version: 0, updatedAt: null };
  return { doc: JSON.parse(row.doc) as ProfileDoc, version: row.version!, updatedAt: row.updatedAt };
}
