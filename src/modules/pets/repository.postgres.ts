import type { PoolClient } from 'pg';
import { StorageUnavailableError } from '../../db/database.js';
import { isUnavailable } from '../../db/postgres-errors.js';
import type { PostgresDatabase } from '../../db/postgres.js';
import { settleAsync, TurnBatch, type Settled } from '../../db/turn-batch.js';
import { sharedThenAlone } from '../../db/turn-writes.postgres.js';
import { settleIdempotent, type Idempotent, type IdempotencyInput } from '../../db/idempotency/records.js';
import { idempotencyRepository } from '../../db/idempotency/repository.js';
import type { PostgresIdempotency } from '../../db/idempotency/repository.postgres.js';
import { eventRepository, eventValues, type PostgresEventAppender } from '../events/index.js';
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
import type { Pet } from './schemas.js';
import {
  createdEvent,
  decideDelete,
  decideUpdate,
  deleteReads,
  updateReads,
  type Found,
  type Reads,
} from './decisions.js';
import { petHolds, petRemovals } from './registries.js';
import {
  deleteTogether,
  updateTogether,
  versioned,
  type BatchSteps,
  type Change,
  type Removal,
  type VersionedRow,
} from './batched-writes.postgres.js';
import { currentTraceparent } from '../../telemetry/context.js';
import { seedPets } from './seed.postgres.js';
import { SQL } from './sql.postgres.js';

/** A creation without an Idempotency-Key, as the turn's batch receives it. */
interface Creation {
  pet: NewPetRecord;
  now: number;
  /** The creating request's trace context, for its event: the batch runs in its first caller's context. */
  traceparent: string | null;
}

function isCategoryForeignKey(error: unknown): boolean {
  const { code, constraint } = (error ?? {}) as { code?: unknown; constraint?: unknown };
  return code === '23503' && constraint === 'pets_category_id_fkey';
}

/** Test seams for fault injection; empty in production. */
export interface PostgresPetHooks {
  /**
   * Runs inside a creation's transaction, right after the pet row and its event are inserted: a creation with
   * an Idempotency-Key, or one run again alone after its turn's statement failed. That statement (createAll)
   * has no such moment; tests fail it from the database (a trigger refusing an event).
   */
  afterInsert?: (client: PoolClient) => void | Promise<void>;
  /** Runs inside a change's or a removal's transaction, right after the row and its event are written. */
  afterWrite?: (client: PoolClient) => void | Promise<void>;
}

export class PostgresPetRepository implements PetRepository {
  readonly hooks: PostgresPetHooks = {};
  private readonly pages = new TurnBatch((queries: ListPetsQuery[]) => this.listPages(queries));
  /**
   * Creations without an Idempotency-Key, one statement per turn (like SQLite's group commit): a transaction
   * per creation costs four round trips and a commit each.
   */
  private readonly creations = new TurnBatch((inputs: Creation[]) => this.createAll(inputs));
  /** Changes and removals without an Idempotency-Key, one transaction per turn as creations (see updateAll). */
  private readonly changes = new TurnBatch((inputs: Change[]) => this.updateAll(inputs));
  private readonly removals = new TurnBatch((inputs: Removal[]) => this.deleteAll(inputs));
  private readonly idempotency: PostgresIdempotency;
  private readonly events: PostgresEventAppender;

  constructor(private readonly db: PostgresDatabase) {
    this.idempotency = db.repository(idempotencyRepository);
    this.events = db.repository(eventRepository);
  }

  readVersion(): string | undefined {
    const version = this.db.readVersion;
    return version === undefined ? undefined : String(version);
  }

  /** The pages asked for in one event-loop turn come from one query (TurnBatch), like key lookups. */
  list(query: ListPetsQuery): Promise<Pet[]> {
    return this.pages.add(query);
  }

  private async listPages(queries: ListPetsQuery[]): Promise<Settled<Pet[]>[]> {
    const rows = await this.db.query<Pet & { i: number }>({
      name: 'pets_list_pages',
      text: SQL.listPages,
      values: [
        queries.map((q) => q.status ?? null),
        queries.map((q) => q.afterId ?? 0),
        queries.map((q) => q.limit),
      ],
    });
    const pages = queries.map((): Pet[] => []);
    for (const { i, ...pet } of rows) pages[i - 1]!.push(pet);
    return pages.map((value) => ({ value }));
  }

  async get(id: number): Promise<VersionedPet | undefined> {
    const [row] = await this.db.query<VersionedRow>({ name: 'pets_get', text: SQL.getPet, values: [id] });
    return row && versioned(row);
  }

  /** Runs `work` in a transaction, under the idempotency record when there is one. */
  private async writeTransaction<T>(
    idempotency: IdempotencyInput | undefined,
    work: (client: PoolClient) => Promise<T>,
    record: (value: T) => { status: number; body: unknown } | undefined,
  ): Promise<Idempotent<T>> {
    return this.db.transaction(async (client) =>
      idempotency
        ? this.idempotency.run(client, idempotency, () => work(client), record)
        : { kind: 'done' as const, value: await work(client) },
    );
  }

  /** The pet locked for this transaction (undefined: there is none). */
  private async lockForWrite(client: PoolClient, id: number): Promise<VersionedPet | undefined> {
    const { rows } = await client.query<VersionedRow>({ name: 'pets_lock', text: SQL.lockPet, values: [id] });
    return rows[0] && versioned(rows[0]);
  }

  /** What a decision asked to have read besides the pet. */
  private async read(client: PoolClient, id: number, reads: Reads): Promise<Found> {
    const found: Found = {};
    if (reads.category !== undefined) {
      const { rowCount } = await client.query({
        name: 'pets_category_exists',
        text: SQL.categoryExists,
        values: [reads.category],
      });
      found.categoryExists = (rowCount ?? 0) > 0;
    }
    if (reads.hold) found.held = (await petHolds.postgresHeld(this.db, client, [id])).has(id);
    return found;
  }

  update(
    id: number,
    change: PetChange,
    precondition?: VersionTest,
    idempotency?: IdempotencyInput,
    now = idempotency?.now ?? Date.now(),
  ): Promise<UpdatePetResult> {
    if (idempotency === undefined) return this.changes.add({ id, change, precondition, now });
    return this.updateOne(id, change, precondition, idempotency, now);
  }

  /**
   * The changes of one turn in one transaction, sharing its statements: one lock of all their pets (in id
   * order), one category check, one ask of the holds (open orders), one update, one append of their events,
   * one commit, each decided as a change alone is (decisions.ts). Each is answered only after that commit,
   * with its own outcome (a refusal is its own: 404, 412, 409, an unknown category). A pet changed twice in
   * one turn has its first change in the batch and the others after it, one by one, in order. As for
   * creations: when the batch fails and rolls back, the change that failed (the test seam, known by
   * position) gets its error and the others run again one by one, so one failing change never takes the
   * others down; an unreachable database fails them all, as it would have failed each alone.
   */
  private updateAll(inputs: Change[]): Promise<Settled<UpdatePetResult>[]> {
    return sharedThenAlone(
      this.db,
      inputs,
      (c) => this.updateOne(c.id, c.change, c.precondition, undefined, c.now),
      (client, changes, failed) => updateTogether(client, changes, failed, this.batchSteps()),
      (c) => c.id,
    );
  }

  /** The removals of one turn, as updateAll does changes. */
  private deleteAll(inputs: Removal[]): Promise<Settled<DeletePetResult>[]> {
    return sharedThenAlone(
      this.db,
      inputs,
      (r) => this.deleteOne(r.id, r.precondition, undefined, r.now),
      (client, removals, failed) => deleteTogether(client, removals, failed, this.batchSteps()),
      (r) => r.id,
    );
  }

  private batchSteps(): BatchSteps {
    return { db: this.db, events: this.events, afterWrite: this.hooks.afterWrite };
  }

  private async updateOne(
    id: number,
    change: PetChange,
    precondition: VersionTest | undefined,
    idempotency: IdempotencyInput | undefined,
    now: number,
  ): Promise<UpdatePetResult> {
    const outcome = await this.writeTransaction(
      idempotency,
      async (client): Promise<UpdatePetResult> => {
        const current = await this.lockForWrite(client, id);
        const request = { change, precondition, now };
        const decision = decideUpdate(
          current,
          request,
          await this.read(client, id, updateReads(current, request)),
        );
        if (decision.kind !== 'update') return decision;
        const { pet, version } = decision.after;
        const { rowCount } = await client.query({
          name: 'pets_update',
          text: SQL.updatePet,
          values: [pet.name, pet.categoryId, pet.status, version, id, decision.version],
        });
        // Unreachable while the row is locked; kept so a lost race can never be reported as success.
        if (rowCount !== 1) return { kind: 'precondition_failed', version: decision.version };
        await this.events.append(client, decision.event);
        await this.hooks.afterWrite?.(client);
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
  }

  delete(
    id: number,
    precondition?: VersionTest,
    idempotency?: IdempotencyInput,
    now = idempotency?.now ?? Date.now(),
  ): Promise<DeletePetResult> {
    if (idempotency === undefined) return this.removals.add({ id, precondition, now });
    return this.deleteOne(id, precondition, idempotency, now);
  }

  private async deleteOne(
    id: number,
    precondition: VersionTest | undefined,
    idempotency: IdempotencyInput | undefined,
    now: number,
  ): Promise<DeletePetResult> {
    const outcome = await this.writeTransaction(
      idempotency,
      async (client): Promise<DeletePetResult> => {
        const current = await this.lockForWrite(client, id);
        const request = { precondition, now };
        const decision = decideDelete(
          current,
          request,
          await this.read(client, id, deleteReads(current, request)),
        );
        if (decision.kind !== 'delete') return decision;
        const deleted = await client.query({
          name: 'pets_delete',
          text: SQL.deletePet,
          values: [id, decision.version],
        });
        if (deleted.rowCount !== 1) return { kind: 'precondition_failed', version: decision.version };
        await this.events.append(client, decision.event);
        // Other modules' rows that depended on the pet (applications), in this transaction: see registries.ts.
        await petRemovals.runPostgres(this.db, client, [{ petId: id, now }]);
        await this.hooks.afterWrite?.(client);
        return { kind: 'deleted' };
      },
      (result) => (result.kind === 'deleted' ? { status: 204, body: null } : undefined),
    );
    return settleIdempotent(outcome, (status) => ({ kind: 'replayed' as const, status }));
  }

  async create(
    pet: NewPetRecord,
    idempotency?: IdempotencyInput,
    now = idempotency?.now ?? Date.now(),
  ): Promise<CreatePetResult> {
    if (idempotency === undefined) return this.creations.add({ pet, now, traceparent: currentTraceparent() });
    return this.createOne(pet, idempotency, now);
  }

  /**
   * The creations of one turn in two round trips: their ids reserved, then the pets and their events written
   * in one statement (insertPetsWithEvents), which is atomic without a transaction of ours. A transaction took
   * four (BEGIN, insert, events, COMMIT), and under load each is read back a turn of the event loop later:
   * a POST took twice a GET (bench/JOURNAL.md, "a creation's round trips"). An input naming an unknown category
   * gets that answer alone. A creation must not take the others down (the storage contract): when the
   * statement fails, nothing of it was written, and each creation runs again alone (createOne), so a row the
   * database refuses (or a category deleted meanwhile, which the EXISTS check cannot see) fails only its own
   * creation. A database that is unreachable or whose answer is in doubt fails the batch's callers instead,
   * as it would have failed each of them alone: running them again could store a creation twice.
   */
  private async createAll(inputs: Creation[]): Promise<Settled<CreatePetResult>[]> {
    const ids = await this.reserveIds(inputs.length);
    const events = inputs.map(({ pet, now, traceparent }, i) =>
      createdEvent(
        { id: ids[i]!, name: pet.name, categoryId: pet.categoryId, status: pet.status },
        now,
        traceparent,
      ),
    );
    let rows: (Pet & { n: number | string })[];
    try {
      rows = await this.db.query<Pet & { n: number | string }>({
        name: 'pets_insert_with_events',
        text: SQL.insertPetsWithEvents,
        values: [
          ids,
          inputs.map((c) => c.pet.name),
          inputs.map((c) => c.pet.categoryId),
          inputs.map((c) => c.pet.status),
          inputs.map((c) => c.now),
          ...eventValues(events),
        ],
      });
    } catch (error) {
      if (error instanceof StorageUnavailableError || isUnavailable(error)) throw error;
      return Promise.all(
        inputs.map(({ pet, now }) => settleAsync(() => this.createOne(pet, undefined, now))),
      );
    }
    const created = inputs.map((): Settled<CreatePetResult> => ({ value: { kind: 'unknown_category' } }));
    for (const { n, id, name, categoryId, status } of rows) {
      created[Number(n) - 1] = { value: { kind: 'created', pet: { id, name, categoryId, status } } };
    }
    return created;
  }

  /** `count` new pet ids, ascending, so a turn's creations are numbered in the order they were asked. */
  private async reserveIds(count: number): Promise<number[]> {
    const rows = await this.db.query<{ id: number | string }>({
      name: 'pets_reserve_ids',
      text: SQL.reservePetIds,
      values: [count],
    });
    return rows.map((row) => Number(row.id)).sort((a, b) => a - b);
  }

  private async createOne(
    pet: NewPetRecord,
    idempotency: IdempotencyInput | undefined,
    now: number,
  ): Promise<CreatePetResult> {
    const values = [pet.name, pet.categoryId, pet.status, now];
    try {
      // Always a transaction: the pet and its event (outbox) commit together.
      const outcome = await this.writeTransaction(
        idempotency,
        async (client): Promise<CreatePetResult> => {
          const inserted = await client.query<Pet>({ name: 'pets_insert', text: SQL.insertPet, values });
          const created = inserted.rows[0];
          if (!created) return { kind: 'unknown_category' };
          await this.events.append(client, createdEvent(created, now));
          await this.hooks.afterInsert?.(client);
          return { kind: 'created', pet: created };
        },
        (result) => (result.kind === 'created' ? { status: 201, body: result.pet } : undefined),
      );
      return settleIdempotent(outcome, (status, body) => ({
        kind: 'replayed' as const,
        status,
        body: body as Pet,
      }));
    } catch (error) {
      // The EXISTS check cannot see a category deleted concurrently; the foreign key still can.
      if (isCategoryForeignKey(error)) return { kind: 'unknown_category' };
      throw error;
    }
  }

  seed(count: number, now: number, onProgress?: (done: number) => void): Promise<number> {
    return seedPets(this.db, count, now, onProgress);
  }
}
