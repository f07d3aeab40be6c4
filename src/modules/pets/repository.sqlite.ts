import type BetterSqlite3 from 'better-sqlite3';
import { runAsPromise, type SqliteDatabase } from '../../db/sqlite.js';
import { settleIdempotent, type IdempotencyInput } from '../../db/idempotency/records.js';
import { idempotencyRepository } from '../../db/idempotency/repository.js';
import type { SqliteIdempotency } from '../../db/idempotency/repository.sqlite.js';
import { eventRepository, type SqliteEventAppender } from '../events/index.js';
import type {
  CreatePetResult,
  DeletePetResult,
  ListPetsQuery,
  NewPetRecord,
  PetChange,
  PetRepository,
  RecordedUpdate,
  UpdatePetResult,
  VersionedPet,
  VersionTest,
} from './repository.js';
import {
  createdEvent,
  decideDelete,
  decideUpdate,
  deleteReads,
  updateReads,
  type Found,
  type Reads,
} from './decisions.js';
import { demoPet } from './demo.js';
import type { Pet, PetStatus } from './schemas.js';
import { petHolds, petRemovals } from './registries.js';

type PetRawRow = [id: number, name: string, categoryId: number, status: PetStatus];
type VersionedRawRow = [...PetRawRow, version: number];
type Statement = BetterSqlite3.Statement<unknown[], PetRawRow>;

function petFromRaw(row: PetRawRow): Pet {
  return { id: row[0], name: row[1], categoryId: row[2], status: row[3] };
}

function petsFromRaw(rows: PetRawRow[]): Pet[] {
  const pets = new Array<Pet>(rows.length);
  for (let i = 0; i < rows.length; i++) pets[i] = petFromRaw(rows[i]!);
  return pets;
}

/** How many distinct page sizes get their own prepared statement (per query shape). */
const MAX_LIMIT_STATEMENTS = 128;

const PET_COLUMNS = 'id, name, category_id AS categoryId, status';

/** Test seams for fault injection; empty in production. */
export interface SqlitePetHooks {
  /** Runs inside a creation's savepoint, right after the pet row and its event are inserted. */
  afterInsert?: (db: BetterSqlite3.Database) => void;
  /** Runs inside a change's or a removal's savepoint, right after the row and its event are written. */
  afterWrite?: (db: BetterSqlite3.Database) => void;
}

export class SqlitePetRepository implements PetRepository {
  readonly hooks: SqlitePetHooks = {};
  private readonly database: SqliteDatabase;
  private readonly db: BetterSqlite3.Database;
  private readonly idempotency: SqliteIdempotency;
  private readonly events: SqliteEventAppender;
  private readonly stmt;
  /** Page queries by page size, with and without the status filter; see listStatement. */
  private readonly listStatements = {
    all: new Map<number, Statement>(),
    status: new Map<number, Statement>(),
  };

  constructor(database: SqliteDatabase) {
    this.database = database;
    const db = (this.db = database.db);
    this.idempotency = database.repository(idempotencyRepository);
    this.events = database.repository(eventRepository);
    this.stmt = {
      // Raw (array) rows: better-sqlite3 builds row objects property by property through the V8 API, which
      // costs more than the query itself; petFromRaw builds them in JavaScript with one fixed shape.
      listAll: db
        .prepare<[number, number], PetRawRow>(
          `SELECT ${PET_COLUMNS} FROM pets WHERE id > ? ORDER BY id LIMIT ?`,
        )
        .raw(true),
      listByStatus: db
        .prepare<[string, number, number], PetRawRow>(
          `SELECT ${PET_COLUMNS} FROM pets WHERE status = ? AND id > ? ORDER BY id LIMIT ?`,
        )
        .raw(true),
      getPet: db
        .prepare<[number], VersionedRawRow>(`SELECT ${PET_COLUMNS}, version FROM pets WHERE id = ?`)
        .raw(true),
      // The row as decided (decisions.ts); the version in WHERE makes the write conditional.
      updatePet: db.prepare<[string, number, string, number, number, number]>(
        'UPDATE pets SET name = ?, category_id = ?, status = ?, version = ? WHERE id = ? AND version = ?',
      ),
      deletePet: db.prepare<[number, number]>('DELETE FROM pets WHERE id = ? AND version = ?'),
      // Another module's move of a pet (orders, through petsWithin): conditional on its status when `from`.
      movePet: db.prepare<[string, number], Pet & { version: number }>(
        `UPDATE pets SET status = ?, version = version + 1 WHERE id = ? RETURNING ${PET_COLUMNS}, version`,
      ),
      movePetFrom: db.prepare<[string, number, string], Pet & { version: number }>(
        `UPDATE pets SET status = ?, version = version + 1 WHERE id = ? AND status = ?
         RETURNING ${PET_COLUMNS}, version`,
      ),
      status: db.prepare<[number], PetStatus>('SELECT status FROM pets WHERE id = ?').pluck(true),
      countByStatus: db.prepare<[], { status: PetStatus; n: number }>(
        'SELECT status, count(*) AS n FROM pets GROUP BY status',
      ),
      insertPet: db.prepare<[string, number, string, number], Pet>(
        `INSERT INTO pets (name, category_id, status, created_at) VALUES (?, ?, ?, ?) RETURNING ${PET_COLUMNS}`,
      ),
      categoryExists: db.prepare<[number], { one: number }>('SELECT 1 AS one FROM categories WHERE id = ?'),
    };
  }

  /**
   * A bound `LIMIT ?` makes SQLite recompile the statement on every run (the planner takes the limit into
   * account, so a new value expires the plan): one statement per page size, prepared on first use, keeps
   * the page query prepared for real. Page sizes are 2..101 through the API; past MAX_LIMIT_STATEMENTS
   * distinct sizes, the bound form is used.
   */
  private listStatement(byStatus: boolean, limit: number): Statement | undefined {
    const cache = byStatus ? this.listStatements.status : this.listStatements.all;
    let stmt = cache.get(limit);
    if (stmt === undefined && Number.isSafeInteger(limit) && limit > 0 && cache.size < MAX_LIMIT_STATEMENTS) {
      const where = byStatus ? 'status = ? AND id > ?' : 'id > ?';
      stmt = this.db
        .prepare<unknown[], PetRawRow>(
          `SELECT ${PET_COLUMNS} FROM pets WHERE ${where} ORDER BY id LIMIT ${limit}`,
        )
        .raw(true);
      cache.set(limit, stmt);
    }
    return stmt;
  }

  readVersion(): string | undefined {
    return this.database.readVersion;
  }

  list(query: ListPetsQuery): Promise<Pet[]> {
    return runAsPromise(() => {
      const afterId = query.afterId ?? 0;
      const stmt = this.listStatement(Boolean(query.status), query.limit);
      let rows: PetRawRow[];
      if (query.status) {
        rows = stmt
          ? stmt.all(query.status, afterId)
          : this.stmt.listByStatus.all(query.status, afterId, query.limit);
      } else {
        rows = stmt ? stmt.all(afterId) : this.stmt.listAll.all(afterId, query.limit);
      }
      return petsFromRaw(rows);
    });
  }

  get(id: number): Promise<VersionedPet | undefined> {
    return runAsPromise(() => this.current(id));
  }

  /** For petsWithin (within.ts): the pet's status inside another module's write; undefined: no such pet. */
  statusWithin(id: number): PetStatus | undefined {
    return this.stmt.status.get(id);
  }

  /**
   * For petsWithin: another module's write moves the pet to `to` (version + 1), only from `from` when given;
   * the pet as moved with the status it had, or undefined when it is gone (or not in `from`).
   */
  moveWithin(
    id: number,
    to: PetStatus,
    from?: PetStatus,
  ): (Pet & { version: number; previousStatus: PetStatus }) | undefined {
    if (from !== undefined) {
      const moved = this.stmt.movePetFrom.get(to, id, from);
      return moved && { ...moved, previousStatus: from };
    }
    // The write lock is held: the status read here is the one the update replaces.
    const previousStatus = this.stmt.status.get(id);
    const moved = previousStatus === undefined ? undefined : this.stmt.movePet.get(to, id);
    return moved && { ...moved, previousStatus: previousStatus! };
  }

  /** For petsWithin: how many pets are in each status present. */
  countByStatus(): Promise<Map<PetStatus, number>> {
    return runAsPromise(() => new Map(this.stmt.countByStatus.all().map(({ status, n }) => [status, n])));
  }

  /** The pet as a write reads it (under the write lock). */
  private current(id: number): VersionedPet | undefined {
    const row = this.stmt.getPet.get(id);
    return row && { pet: petFromRaw(row as unknown as PetRawRow), version: row[4] };
  }

  /** What a decision asked to have read besides the pet. */
  private read(id: number, reads: Reads): Found {
    return {
      categoryExists:
        reads.category === undefined ? undefined : !!this.stmt.categoryExists.get(reads.category),
      held: reads.hold ? petHolds.sqliteHeld(this.database, [id]).has(id) : undefined,
    };
  }

  update(
    id: number,
    change: PetChange,
    precondition?: VersionTest,
    idempotency?: IdempotencyInput,
    now = idempotency?.now ?? Date.now(),
  ): Promise<UpdatePetResult> {
    // Group commit (SqliteDatabase.writeInTurn): the changes of one turn share a transaction, each in its
    // own savepoint, each answered after the commit.
    return this.database.writeInTurn((): UpdatePetResult => {
      const outcome = this.idempotency.run(
        idempotency,
        (): UpdatePetResult => {
          const current = this.current(id);
          const request = { change, precondition, now };
          const decision = decideUpdate(current, request, this.read(id, updateReads(current, request)));
          if (decision.kind !== 'update') return decision;
          const { pet, version } = decision.after;
          const { changes } = this.stmt.updatePet.run(
            pet.name,
            pet.categoryId,
            pet.status,
            version,
            id,
            decision.version,
          );
          // Unreachable under the write lock; kept so a lost race can never be reported as success.
          if (changes !== 1) return { kind: 'precondition_failed', version: decision.version };
          this.events.append(decision.event);
          this.hooks.afterWrite?.(this.db);
          return { kind: 'updated', pet, version };
        },
        (result) =>
          result.kind === 'updated'
            ? { status: 200, body: { pet: result.pet, version: result.version } satisfies RecordedUpdate }
            : undefined,
      );
      return settleIdempotent(outcome, (status, body) => {
        const recorded = body as RecordedUpdate;
        return { kind: 'replayed' as const, status, pet: recorded.pet, version: recorded.version };
      });
    });
  }

  delete(
    id: number,
    precondition?: VersionTest,
    idempotency?: IdempotencyInput,
    now = idempotency?.now ?? Date.now(),
  ): Promise<DeletePetResult> {
    return this.database.writeInTurn((): DeletePetResult => {
      const outcome = this.idempotency.run(
        idempotency,
        (): DeletePetResult => {
          const current = this.current(id);
          const request = { precondition, now };
          const decision = decideDelete(current, request, this.read(id, deleteReads(current, request)));
          if (decision.kind !== 'delete') return decision;
          if (this.stmt.deletePet.run(id, decision.version).changes !== 1) {
            return { kind: 'precondition_failed', version: decision.version };
          }
          this.events.append(decision.event);
          // Other modules' rows that depended on the pet (applications), in this transaction: see registries.ts.
          petRemovals.runSqlite(this.database, [{ petId: id, now }]);
          this.hooks.afterWrite?.(this.db);
          return { kind: 'deleted' };
        },
        (result) => (result.kind === 'deleted' ? { status: 204, body: null } : undefined),
      );
      return settleIdempotent(outcome, (status) => ({ kind: 'replayed' as const, status }));
    });
  }

  private createInTransaction(
    pet: NewPetRecord,
    idempotency: IdempotencyInput | undefined,
    now: number,
  ): CreatePetResult {
    const outcome = this.idempotency.run(
      idempotency,
      (): CreatePetResult => {
        if (!this.stmt.categoryExists.get(pet.categoryId)) return { kind: 'unknown_category' };
        const created = this.stmt.insertPet.get(pet.name, pet.categoryId, pet.status, now)!;
        // In the creation's own savepoint: a creation of the batch that fails takes its event with it.
        this.events.append(createdEvent(created, now));
        this.hooks.afterInsert?.(this.db);
        return { kind: 'created', pet: created };
      },
      (result) => (result.kind === 'created' ? { status: 201, body: result.pet } : undefined),
    );
    return settleIdempotent(outcome, (status, body) => ({
      kind: 'replayed' as const,
      status,
      body: body as Pet,
    }));
  }

  /**
   * Group commit (SqliteDatabase.writeInTurn): creations requested during one turn of the event loop are
   * written in one transaction (with the turn's other writes), committed before any of their promises
   * settles. Every acknowledged pet is as durable as before, but the commit's fixed cost (locks, WAL frames for the same table and index pages, the sequence row) is paid
   * once per turn instead of once per request: under 50 concurrent writers that was most of a POST's CPU.
   * A quiet server commits each creation alone, one turn later. Within the batch creations run in arrival
   * order, so a duplicate Idempotency-Key replays the first; the in-progress case never arises here.
   */
  create(
    pet: NewPetRecord,
    idempotency?: IdempotencyInput,
    now = idempotency?.now ?? Date.now(),
  ): Promise<CreatePetResult> {
    return this.database.writeInTurn(() => this.createInTransaction(pet, idempotency, now));
  }

  async seed(count: number, now: number, onProgress?: (done: number) => void): Promise<number> {
    const start = await runAsPromise(
      () => (this.db.prepare('SELECT count(*) AS n FROM pets').get() as { n: number }).n,
    );
    const insert = this.db.prepare(
      'INSERT INTO pets (name, category_id, status, created_at) VALUES (?, ?, ?, ?)',
    );
    const batch = this.db.transaction((from: number, to: number) => {
      for (let i = from; i < to; i++) {
        const p = demoPet(start + i);
        insert.run(p.name, p.categoryId, p.status, now);
      }
    });
    // Chunk by chunk, each its own transaction: the server's writes get the lock in between.
    for (let i = 0; i < count; i += 50_000) {
      const to = Math.min(count, i + 50_000);
      await this.database.write(() => batch.immediate(i, to));
      onProgress?.(to);
    }
    return count;
  }
}
