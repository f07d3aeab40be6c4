import type { PoolClient } from 'pg';
import type { PostgresDatabase } from '../../db/postgres.js';
import { settleIdempotent, type IdempotencyInput } from '../../db/idempotency/records.js';
import { idempotencyRepository } from '../../db/idempotency/repository.js';
import type { PostgresIdempotency } from '../../db/idempotency/repository.postgres.js';
import type { AddOutcome, ChangeOutcome, NewPhoto, PhotoRepository, PhotoWrite } from './repository.js';
import { photoAddition, photoMove, photoRemoval, recordOf, WRITE_STATUS, type Shift } from './decisions.js';
import { PHOTO_COLUMNS } from './rows.js';
import type { PhotoRecord, PhotoSize } from './schemas.js';

const COUNT =
  'SELECT (SELECT count(*) FROM pet_photos WHERE pet_id = p.id)::int AS n FROM pets p WHERE p.id = $1';

/** Every write locks the pet's row first, so a pet's photo writes take turns and positions stay dense. */
export class PostgresPhotoRepository implements PhotoRepository {
  private readonly idempotency: PostgresIdempotency;

  constructor(private readonly db: PostgresDatabase) {
    this.idempotency = db.repository(idempotencyRepository);
  }

  async count(petId: number): Promise<number | undefined> {
    const rows = await this.db.query<{ n: number }>({ name: 'photos_count', text: COUNT, values: [petId] });
    return rows[0]?.n;
  }

  private write<T extends AddOutcome | ChangeOutcome>(
    idempotency: IdempotencyInput | undefined,
    status: number,
    work: (client: PoolClient) => Promise<T>,
  ): Promise<PhotoWrite<T>> {
    return this.db.transaction(async (client) => {
      if (!idempotency) return work(client);
      return settleIdempotent(
        await this.idempotency.run(client, idempotency, () => work(client), recordOf(status)),
      ) as PhotoWrite<T>;
    });
  }

  /**
   * Locks the pet and counts its photos; undefined for an unknown pet. The count is a statement of its own,
   * after the lock: in READ COMMITTED a statement sees what was committed when it started, so a count in the
   * locking statement missed the photo the lock's holder added (two adds at once both went to one position).
   */
  private async lockPet(client: PoolClient, petId: number): Promise<number | undefined> {
    const locked = await client.query({
      name: 'photos_lock_pet_row',
      text: 'SELECT 1 FROM pets WHERE id = $1 FOR UPDATE',
      values: [petId],
    });
    if (locked.rowCount === 0) return undefined;
    const { rows } = await client.query<{ n: number }>({
      name: 'photos_count_locked',
      text: 'SELECT count(*)::int AS n FROM pet_photos WHERE pet_id = $1',
      values: [petId],
    });
    return rows[0]!.n;
  }

  private async get(client: PoolClient, photoId: string, petId: number): Promise<PhotoRecord | undefined> {
    const { rows } = await client.query<PhotoRecord>({
      name: 'photos_get',
      text: `SELECT ${PHOTO_COLUMNS} FROM pet_photos WHERE id = $1 AND pet_id = $2`,
      values: [photoId, petId],
    });
    return rows[0];
  }

  add(photo: NewPhoto, idempotency?: IdempotencyInput): Promise<PhotoWrite<AddOutcome>> {
    return this.write(idempotency, WRITE_STATUS.add, async (client): Promise<AddOutcome> => {
      const addition = photoAddition(await this.lockPet(client, photo.petId), photo.max);
      if (addition.kind !== 'insert') return addition;
      await client.query({
        name: 'photos_insert',
        text: 'INSERT INTO pet_photos (id, pet_id, position, width, height, created_at) VALUES ($1, $2, $3, $4, $5, $6)',
        values: [photo.id, photo.petId, addition.position, photo.width, photo.height, photo.now],
      });
      const sizes = ['original', ...Object.keys(photo.files)];
      await client.query({
        name: 'photos_insert_files',
        text: 'INSERT INTO pet_photo_files (photo_id, size, bytes) SELECT $1, unnest($2::text[]), unnest($3::bytea[])',
        values: [photo.id, sizes, [photo.original, ...Object.values(photo.files)]],
      });
      return { kind: 'added', photo: (await this.get(client, photo.id, photo.petId))! };
    });
  }

  async list(petId: number): Promise<PhotoRecord[] | undefined> {
    const rows = await this.db.query<PhotoRecord>({
      name: 'photos_list',
      text: `SELECT ph.id, ph.pet_id AS "petId", ph.position, ph.width, ph.height, ph.created_at AS "createdAt"
             FROM pets p LEFT JOIN pet_photos ph ON ph.pet_id = p.id WHERE p.id = $1 ORDER BY ph.position`,
      values: [petId],
    });
    if (rows.length === 0) return undefined;
    return rows.filter((row) => row.id !== null);
  }

  remove(petId: number, photoId: string, idempotency?: IdempotencyInput): Promise<PhotoWrite<ChangeOutcome>> {
    return this.write(idempotency, WRITE_STATUS.remove, async (client): Promise<ChangeOutcome> => {
      const count = await this.lockPet(client, petId);
      const removal = photoRemoval(
        count,
        count === undefined ? undefined : await this.get(client, photoId, petId),
      );
      if (removal.kind !== 'delete') return removal;
      await client.query({
        name: 'photos_delete',
        text: 'DELETE FROM pet_photos WHERE id = $1',
        values: [photoId],
      });
      await this.shift(client, petId, removal.shift);
      return { kind: 'done', photo: removal.photo };
    });
  }

  move(
    petId: number,
    photoId: string,
    position: number,
    idempotency?: IdempotencyInput,
  ): Promise<PhotoWrite<ChangeOutcome>> {
    return this.write(idempotency, WRITE_STATUS.move, async (client): Promise<ChangeOutcome> => {
      const count = await this.lockPet(client, petId);
      const photo = count === undefined ? undefined : await this.get(client, photoId, petId);
      const move = photoMove(count, photo, position);
      if (move.kind !== 'place') return move;
      // The shift and the placing in one statement (one round trip).
      await client.query({
        name: 'photos_move',
        text: `UPDATE pet_photos SET position = CASE WHEN id = $2 THEN $3::int ELSE position + $4::int END
               WHERE pet_id = $1 AND (id = $2 OR position BETWEEN $5::int AND $6::int)`,
        values: [petId, photoId, position, move.shift?.by ?? 0, move.shift?.from ?? 0, move.shift?.to ?? -1],
      });
      return { kind: 'done', photo: move.photo };
    });
  }

  private async shift(client: PoolClient, petId: number, shift: Shift | undefined): Promise<void> {
    if (!shift) return;
    await client.query({
      name: 'photos_shift',
      text: 'UPDATE pet_photos SET position = position + $2::int WHERE pet_id = $1 AND position BETWEEN $3::int AND $4::int',
      values: [petId, shift.by, shift.from, shift.to],
    });
  }

  async exists(photoId: string): Promise<boolean> {
    const rows = await this.db.query({
      name: 'photos_exists',
      text: 'SELECT 1 FROM pet_photos WHERE id = $1',
      values: [photoId],
    });
    return rows.length > 0;
  }

  async file(photoId: string, size: PhotoSize): Promise<Buffer | undefined> {
    const rows = await this.db.query<{ bytes: Buffer }>({
      name: 'photos_file',
      text: 'SELECT bytes FROM pet_photo_files WHERE photo_id = $1 AND size = $2',
      values: [photoId, size],
    });
    return rows[0]?.bytes;
  }
}
