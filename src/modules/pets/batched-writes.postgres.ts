/**
 * PostgreSQL: the changes and removals of one event-loop turn, batched into one transaction (the repository's
 * TurnBatch hands them here through sharedThenAlone), sharing its statements: one lock of all their pets in
 * id order, one category check, one ask of the holds (petHolds: open orders), one update or delete, one
 * append of their events. Each input is decided by the same function as a write alone (decisions.ts), on
 * the rows as locked, so a batch and a single write cannot disagree.
 */
import type { PoolClient } from 'pg';
import type { PostgresDatabase } from '../../db/postgres.js';
import { afterEachWrite } from '../../db/turn-writes.postgres.js';
import type { PostgresEventAppender } from '../events/index.js';
import {
  decideDelete,
  decideUpdate,
  deleteReads,
  updateReads,
  type DeleteDecision,
  type DeleteRequest,
  type Found,
  type Reads,
  type UpdateDecision,
  type UpdateRequest,
} from './decisions.js';
import type { DeletePetResult, PetChange, UpdatePetResult, VersionedPet, VersionTest } from './repository.js';
import type { Pet } from './schemas.js';
import { petHolds, petRemovals } from './registries.js';

// bigint columns arrive as strings unless a type parser says otherwise; versions are converted here.
export type VersionedRow = Pet & { version: number | string };

export function versioned({ version, ...pet }: VersionedRow): VersionedPet {
  return { pet, version: Number(version) };
}

// Rows are selected with column aliases that make them the domain shape as it is.
export const PET_COLUMNS = 'id, name, category_id AS "categoryId", status';

/** A change without an Idempotency-Key, as the turn's batch receives it. */
export interface Change {
  id: number;
  change: PetChange;
  precondition: VersionTest | undefined;
  now: number;
}

/** A removal without an Idempotency-Key, as the turn's batch receives it. */
export interface Removal {
  id: number;
  precondition: VersionTest | undefined;
  now: number;
}

/** What a batch does besides its own statements: append events, run the test seam after each write. */
export interface BatchSteps {
  db: PostgresDatabase;
  events: PostgresEventAppender;
  afterWrite: ((client: PoolClient) => void | Promise<void>) | undefined;
}

const SQL = {
  // The pets of a turn's changes, locked in id order: batches of several instances (and single writes,
  // which lock one pet, and other modules' writes through petsWithin) always take pet locks in the same
  // order, so they cannot deadlock on them.
  lockPets: `SELECT ${PET_COLUMNS}, version FROM pets WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE`,
  deletePets: 'DELETE FROM pets WHERE id = ANY($1::bigint[])',
  categoriesExist: 'SELECT id FROM categories WHERE id = ANY($1::bigint[])',
  // The rows as decided (decisions.ts), on rows locked at the versions they were decided on.
  updatePets: `UPDATE pets p SET name = u.name, category_id = u.category_id, status = u.status, version = u.version
    FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::bigint[])
      AS u(id, name, category_id, status, version)
    WHERE p.id = u.id`,
} as const;

/** The pets, locked in id order (SQL.lockPets says why), by id; a pet that does not exist is absent. */
export async function lockInIdOrder(
  client: PoolClient,
  petIds: readonly number[],
): Promise<Map<number, VersionedPet>> {
  const ids = [...new Set(petIds)].sort((a, b) => a - b);
  const locked = await client.query<VersionedRow>({
    name: 'pets_lock_all',
    text: SQL.lockPets,
    values: [ids],
  });
  return new Map(locked.rows.map((row) => [Number(row.id), versioned(row)]));
}

/** What the decisions of a batch asked to have read besides the pets, asked once for all of them. */
async function readAll(
  client: PoolClient,
  steps: BatchSteps,
  writes: readonly { id: number }[],
  reads: readonly Reads[],
): Promise<Found[]> {
  const categoryIds = [...new Set(reads.flatMap((r) => (r.category === undefined ? [] : [r.category])))];
  const categories = new Set<number>();
  if (categoryIds.length > 0) {
    const found = await client.query<{ id: number }>({
      name: 'pets_categories_exist',
      text: SQL.categoriesExist,
      values: [categoryIds],
    });
    for (const { id } of found.rows) categories.add(Number(id));
  }
  const held = await petHolds.postgresHeld(
    steps.db,
    client,
    writes.filter((_, k) => reads[k]!.hold).map((w) => w.id),
  );
  return reads.map((r, k) => ({
    categoryExists: r.category === undefined ? undefined : categories.has(r.category),
    held: r.hold ? held.has(writes[k]!.id) : undefined,
  }));
}

/** The removals of one turn: each gets deleted or the refusal a removal alone would get. */
export async function deleteTogether(
  client: PoolClient,
  removals: Removal[],
  failed: Map<number, unknown>,
  steps: BatchSteps,
): Promise<DeletePetResult[]> {
  const pets = await lockInIdOrder(
    client,
    removals.map((r) => r.id),
  );
  const requests = removals.map((r): DeleteRequest => ({ precondition: r.precondition, now: r.now }));
  const reads = removals.map((r, k) => deleteReads(pets.get(r.id), requests[k]!));
  const found = await readAll(client, steps, removals, reads);
  const decisions = removals.map((r, k): DeleteDecision =>
    decideDelete(pets.get(r.id), requests[k]!, found[k]!),
  );
  const results = decisions.map((d): DeletePetResult => (d.kind === 'delete' ? { kind: 'deleted' } : d));
  const gone = removals.filter((_, k) => decisions[k]!.kind === 'delete');
  if (gone.length === 0) return results;
  const deleted = await client.query({
    name: 'pets_delete_all',
    text: SQL.deletePets,
    values: [gone.map((r) => r.id)],
  });
  // Unreachable while the rows are locked; kept so a lost row can never be reported as success.
  if (deleted.rowCount !== gone.length) throw new Error('pets locked but not deleted');
  await steps.events.appendAll(
    client,
    decisions.flatMap((d) => (d.kind === 'delete' ? [d.event] : [])),
  );
  // Other modules' rows that depended on the pets (applications), in this transaction: see registries.ts.
  await petRemovals.runPostgres(
    steps.db,
    client,
    gone.map((r) => ({ petId: r.id, now: r.now })),
  );
  await afterEachWrite(results, (result) => result.kind === 'deleted', steps.afterWrite, client, failed);
  return results;
}

/** The changes of one turn: each gets updated or the refusal a change alone would get. */
export async function updateTogether(
  client: PoolClient,
  changes: Change[],
  failed: Map<number, unknown>,
  steps: BatchSteps,
): Promise<UpdatePetResult[]> {
  const pets = await lockInIdOrder(
    client,
    changes.map((c) => c.id),
  );
  const requests = changes.map((c): UpdateRequest => ({
    change: c.change,
    precondition: c.precondition,
    now: c.now,
  }));
  const reads = changes.map((c, k) => updateReads(pets.get(c.id), requests[k]!));
  const found = await readAll(client, steps, changes, reads);
  const decisions = changes.map((c, k): UpdateDecision =>
    decideUpdate(pets.get(c.id), requests[k]!, found[k]!),
  );
  const results = decisions.map((d): UpdatePetResult =>
    d.kind === 'update' ? { kind: 'updated', ...d.after } : d,
  );
  const writes = decisions.flatMap((d) => (d.kind === 'update' ? [d.after] : []));
  if (writes.length === 0) return results;
  const updated = await client.query({
    name: 'pets_update_all',
    text: SQL.updatePets,
    values: [
      writes.map((w) => w.pet.id),
      writes.map((w) => w.pet.name),
      writes.map((w) => w.pet.categoryId),
      writes.map((w) => w.pet.status),
      writes.map((w) => w.version),
    ],
  });
  // Unreachable while the rows are locked; kept so a lost row can never be reported as success.
  if (updated.rowCount !== writes.length) throw new Error('pets locked but not updated');
  await steps.events.appendAll(
    client,
    decisions.flatMap((d) => (d.kind === 'update' ? [d.event] : [])),
  );
  await afterEachWrite(results, (result) => result.kind === 'updated', steps.afterWrite, client, failed);
  return results;
}
