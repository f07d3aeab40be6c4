import type { PoolClient } from 'pg';
import type { PostgresDatabase } from '../../db/postgres.js';
import { settleIdempotent, type IdempotencyInput } from '../../db/idempotency/records.js';
import { idempotencyRepository } from '../../db/idempotency/repository.js';
import type { PostgresIdempotency } from '../../db/idempotency/repository.postgres.js';
import { eventRepository, type PostgresEventAppender } from '../events/index.js';
import type {
  ProfileDoc,
  ProfileRecord,
  ProfileRepository,
  ProfileWrite,
  ProfileWriteResult,
} from './repository.js';
import { profileWrite, recordOf, searchColumns, searchValues } from './decisions.js';

type Row = { doc: string | null; version: string | null; updatedAt: string | null };

const READ = `SELECT pr.doc, pr.version::text AS version, pr.updated_at::text AS "updatedAt" FROM pets p
  LEFT JOIN pet_profiles pr ON pr.pet_id = p.id WHERE p.id = $1`;
// The pet's row is locked first: concurrent writes of one profile (and a deletion of its pet) take turns.
// The profile is read by a statement of its own, after the lock: in READ COMMITTED a statement sees what was
// committed when it started, so reading it in the locking statement missed the write the lock's holder made
// (two writes at once both became the same version, one of them lost).
const LOCK = 'SELECT 1 FROM pets WHERE id = $1 FOR UPDATE';
const READ_LOCKED = `SELECT doc, version::text AS version, updated_at::text AS "updatedAt" FROM pet_profiles
  WHERE pet_id = $1`;
const upsertSql = (): string => {
  const COLUMNS = ['pet_id', 'doc', 'version', 'updated_at', ...searchColumns()];
  return `INSERT INTO pet_profiles (${COLUMNS.join(', ')})
  VALUES (${COLUMNS.map((_, i) => `$${i + 1}`).join(', ')})
  ON CONFLICT (pet_id) DO UPDATE SET ${COLUMNS.slice(1)
    .map((c) => `${c} = excluded.${c}`)
    .join(', ')}`;
};

export class PostgresProfileRepository implements ProfileRepository {
  private readonly idempotency: PostgresIdempotency;
  private readonly events: PostgresEventAppender;
  private readonly upsert = upsertSql();

  constructor(private readonly db: PostgresDatabase) {
    this.idempotency = db.repository(idempotencyRepository);
    this.events = db.repository(eventRepository);
  }

  async get(petId: number): Promise<ProfileRecord | undefined> {
    const rows = await this.db.query<Row>({ name: 'profile_get', text: READ, values: [petId] });
    return toRecord(rows[0]);
  }

  write(input: ProfileWrite, idempotency?: IdempotencyInput): Promise<ProfileWriteResult> {
    return this.db.transaction(async (client) => {
      if (!idempotency) return this.writeNow(client, input);
      return settleIdempotent(
        await this.idempotency.run(client, idempotency, () => this.writeNow(client, input), recordOf),
      );
    });
  }

  async seed(profiles: { petId: number; doc: ProfileDoc }[], now: number): Promise<void> {
    const width = 4 + searchColumns().length;
    for (let i = 0; i < profiles.length; i += 1_000) {
      const chunk = profiles.slice(i, i + 1_000);
      const values = chunk.flatMap(({ petId, doc }) => [
        petId,
        JSON.stringify(doc),
        1,
        now,
        ...searchValues(doc),
      ]);
      const rows = chunk.map(
        (_, r) => `(${Array.from({ length: width }, (_, c) => `$${r * width + c + 1}`).join(', ')})`,
      );
      // A profile already there stays (see ProfileRepository.seed).
      await this.db.execute({
        text: `INSERT INTO pet_profiles (pet_id, doc, version, updated_at, ${searchColumns().join(', ')})
               VALUES ${rows.join(', ')} ON CONFLICT (pet_id) DO NOTHING`,
        values,
      });
    }
  }

  private async writeNow(client: PoolClient, input: ProfileWrite): Promise<ProfileWriteResult> {
    // The lock first, the read after it: under READ COMMITTED a read in the locking statement would see the
    // profile as it was before the lock's previous holder committed.
    const locked = await client.query({ name: 'profile_lock_pet', text: LOCK, values: [input.petId] });
    const read =
      locked.rowCount === 0
        ? undefined
        : ((
            await client.query<Row>({ name: 'profile_read_locked', text: READ_LOCKED, values: [input.petId] })
          ).rows[0] ?? { doc: null, version: null, updatedAt: null });
    const write = profileWrite(toRecord(read), input);
    if (write.kind !== 'store') return write;
    const { record, event } = write;
    await client.query({
      name: 'profile_upsert',
      text: this.upsert,
      values: [
        input.petId,
        JSON.stringify(record.doc),
        record.version,
        input.now,
        ...searchValues(record.doc),
      ],
    });
    await this.events.append(client, event);
    return { kind: 'done', record };
  }
}

function toRecord(row: Row | undefined): ProfileRecord | undefined {
  if (!row) return undefined;
  if (row.doc === null) return { doc: {}, version: 0, updatedAt: null };
  return {
    doc: JSON.parse(row.doc) as ProfileDoc,
    version: Number(row.version),
    updatedAt: row.updatedAt === null ? null : Number(row.updatedAt),
  };
}
