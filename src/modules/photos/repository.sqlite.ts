import type BetterSqlite3 from 'better-sqlite3';
import { runAsPromise, type SqliteDatabase } from '../../db/sqlite.js';
import { settleIdempotent, type IdempotencyInput } from '../../db/idempotency/records.js';
import { idempotencyRepository } from '../../db/idempotency/repository.js';
import type { SqliteIdempotency } from '../../db/idempotency/repository.sqlite.js';
import type { AddOutcome, ChangeOutcome, NewPhoto, PhotoRepository, PhotoWrite } from './repository.js';
import { photoAddition, photoMove, photoRemoval, recordOf, WRITE_STATUS, type Shift } from './decisions.js';
import { PHOTO_COLUMNS } from './rows.js';
import { RecentFiles } from './recent-files.js';
import type { PhotoRecord, PhotoSize } from './schemas.js';

/** Writes run in the turn's group commit (SqliteDatabase.writeInTurn), under the write lock. */
export class SqlitePhotoRepository implements PhotoRepository {
  private readonly db: BetterSqlite3.Database;
  private readonly idempotency: SqliteIdempotency;
  private readonly stmt;
  /** 16 MiB of the renderings served last: a few thousand medium ones. */
  private readonly recent = new RecentFiles(16 * 1024 * 1024, 1024 * 1024);

  constructor(private readonly database: SqliteDatabase) {
    const db = (this.db = database.db);
    this.idempotency = database.repository(idempotencyRepository);
    this.stmt = {
      count: db
        .prepare<[number], number | null>(
          'SELECT (SELECT count(*) FROM pet_photos WHERE pet_id = p.id) FROM pets p WHERE p.id = ?',
        )
        .pluck(true),
      list: db.prepare<[number], PhotoRecord>(
        `SELECT ${PHOTO_COLUMNS} FROM pet_photos WHERE pet_id = ? ORDER BY position`,
      ),
      get: db.prepare<[string, number], PhotoRecord>(
        `SELECT ${PHOTO_COLUMNS} FROM pet_photos WHERE id = ? AND pet_id = ?`,
      ),
      insert: db.prepare<[string, number, number, number, number, number]>(
        'INSERT INTO pet_photos (id, pet_id, position, width, height, created_at) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      insertFile: db.prepare<[string, string, Buffer]>(
        'INSERT INTO pet_photo_files (photo_id, size, bytes) VALUES (?, ?, ?)',
      ),
      delete: db.prepare<[string]>('DELETE FROM pet_photos WHERE id = ?'),
      shift: db.prepare<[number, number, number, number]>(
        'UPDATE pet_photos SET position = position + ? WHERE pet_id = ? AND position BETWEEN ? AND ?',
      ),
      place: db.prepare<[number, string]>('UPDATE pet_photos SET position = ? WHERE id = ?'),
      file: db
        .prepare<[string, string], Buffer>(
          'SELECT bytes FROM pet_photo_files WHERE photo_id = ? AND size = ?',
        )
        .pluck(true),
      exists: db.prepare<[string], number>('SELECT 1 FROM pet_photos WHERE id = ?').pluck(true),
    };
  }

  count(petId: number): Promise<number | undefined> {
    return runAsPromise(() => this.stmt.count.get(petId) ?? undefined);
  }

  add(photo: NewPhoto, idempotency?: IdempotencyInput): Promise<PhotoWrite<AddOutcome>> {
    return this.database.writeInTurn(() =>
      settleIdempotent(
        this.idempotency.run(
          idempotency,
          (): AddOutcome => {
            const addition = photoAddition(this.countNow(photo.petId), photo.max);
            if (addition.kind !== 'insert') return addition;
            this.stmt.insert.run(
              photo.id,
              photo.petId,
              addition.position,
              photo.width,
              photo.height,
              photo.now,
            );
            this.stmt.insertFile.run(photo.id, 'original', photo.original);
            for (const [size, bytes] of Object.entries(photo.files)) {
              this.stmt.insertFile.run(photo.id, size, bytes);
            }
            return { kind: 'added', photo: this.stmt.get.get(photo.id, photo.petId)! };
          },
          recordOf(WRITE_STATUS.add),
        ),
      ),
    );
  }

  list(petId: number): Promise<PhotoRecord[] | undefined> {
    return runAsPromise(() => (this.stmt.count.get(petId) == null ? undefined : this.stmt.list.all(petId)));
  }

  remove(petId: number, photoId: string, idempotency?: IdempotencyInput): Promise<PhotoWrite<ChangeOutcome>> {
    return this.database.writeInTurn(() =>
      settleIdempotent(
        this.idempotency.run(
          idempotency,
          (): ChangeOutcome => {
            const removal = photoRemoval(this.countNow(petId), this.stmt.get.get(photoId, petId));
            if (removal.kind !== 'delete') return removal;
            this.stmt.delete.run(photoId);
            this.shift(petId, removal.shift);
            return { kind: 'done', photo: removal.photo };
          },
          recordOf(WRITE_STATUS.remove),
        ),
      ),
    );
  }

  move(
    petId: number,
    photoId: string,
    position: number,
    idempotency?: IdempotencyInput,
  ): Promise<PhotoWrite<ChangeOutcome>> {
    return this.database.writeInTurn(() =>
      settleIdempotent(
        this.idempotency.run(
          idempotency,
          (): ChangeOutcome => {
            const move = photoMove(this.countNow(petId), this.stmt.get.get(photoId, petId), position);
            if (move.kind !== 'place') return move;
            this.shift(petId, move.shift);
            this.stmt.place.run(position, photoId);
            return { kind: 'done', photo: move.photo };
          },
          recordOf(WRITE_STATUS.move),
        ),
      ),
    );
  }

  /** The pet's number of photos; undefined for an unknown pet. */
  private countNow(petId: number): number | undefined {
    return this.stmt.count.get(petId) ?? undefined;
  }

  private shift(petId: number, shift: Shift | undefined): void {
    if (shift) this.stmt.shift.run(shift.by, petId, shift.from, shift.to);
  }

  exists(photoId: string): Promise<boolean> {
    return runAsPromise(() => this.stmt.exists.get(photoId) !== undefined);
  }

  /**
   * A rendering served recently comes from memory after one lookup of the photo's id (it may have been
   * deleted, here or by another process); the bytes themselves, read from their blob, cost several times that.
   */
  file(photoId: string, size: PhotoSize): Promise<Buffer | undefined> {
    return runAsPromise(() => {
      const key = `${photoId}/${size}`;
      const kept = this.recent.get(key);
      if (kept !== undefined) {
        if (this.stmt.exists.get(photoId) !== undefined) return kept;
        this.recent.delete(key);
        return undefined;
      }
      const bytes = this.stmt.file.get(photoId, size);
      if (bytes !== undefined) this.recent.set(key, bytes);
      return bytes;
    });
  }
}
