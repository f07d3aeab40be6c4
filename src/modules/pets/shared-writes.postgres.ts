/**
 * PostgreSQL: the changes and removals of one event-loop turn in one transaction (the repository's TurnBatch
 * hands them here through sharedThenAlone), sharing its statements: one lock of all their pets in id order,
 * one category check, one open-order check, one update or delete, one append of their events. Each input gets
 * the outcome it would have had alone, in the order a write alone checks (the repository's updateOne and
 * deleteOne), so a batch and a single write cannot disagree.
 */
import type { PoolClient } from 'pg';
import type { PostgresDatabase } from '../../db/postgres.js';
import { afterEachWrite } from '../../db/turn-writes.js';
import { buildEvent, previousValues, type PostgresEventAppender } from '../events/index.js';
import type { DeletePetResult, PetChange, UpdatePetResult, VersionedPet, VersionTest } from './repository.js';
import type { Pet } from './schemas.js';
import { petRemovals } from './within.js';

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

/** What a shared write does besides its own statements: append events, run the test seam after each write. */
export interface SharedWriteSteps {
  db: PostgresDatabase;
  events: PostgresEventAppender;
  afterWrite: ((client: PoolClient) => void | Promise<void>) | undefined;
}

const SQL = {
  // The pets of a turn's changes, locked in id order: batches of several instances (and single writes,
  // which lock one pet) always take pet locks in the same order, so they cannot deadlock on them.
  lockPets: `SELECT ${PET_COLUMNS}, version FROM pets WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE`,
  deletePets: 'DELETE FROM pets WHERE id = ANY($1::bigint[])',
  categoriesExist: 'SELECT id FROM categories WHERE id = ANY($1::bigint[])',
  openOrders: `SELECT DISTINCT pet_id AS id FROM orders
    WHERE pet_id = ANY($1::bigint[]) AND status IN ('placed', 'approved')`,
  updatePets: `UPDATE pets p SET name = COALESCE(u.name, p.name), category_id = COALESCE(u.category_id, p.category_id),
      status = COALESCE(u.status, p.status), version = p.version + 1
    FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[]) AS u(id, name, category_id, status)
    WHERE p.id = u.id
    RETURNING p.id, p.name, p.category_id AS "categoryId", p.status, p.version`,
} as const;

/** The turn's pets, locked in id order (SQL.lockPets says why), by id; a pet that does not exist is absent. */
async function lockInIdOrder(
  client: PoolClient,
  writes: { id: number }[],
): Promise<Map<number, VersionedRow>> {
  const ids = [...new Set(writes.map((w) => w.id))].sort((a, b) => a - b);
  const locked = await client.query<VersionedRow>({
    name: 'pets_lock_all',
    text: SQL.lockPets,
    values: [ids],
  });
  return new Map(locked.rows.map((row) => [Number(row.id), row]));
}

/** Which of `ids` have an order placed or approved (none asked, no statement). */
async function openOrderPets(client: PoolClient, ids: number[]): Promise<Set<number>> {
  const withOpenOrder = new Set<number>();
  if (ids.length === 0) return withOpenOrder;
  const open = await client.query<{ id: number }>({
    name: 'pets_open_orders',
    text: SQL.openOrders,
    values: [ids],
  });
  for (const { id } of open.rows) withOpenOrder.add(Number(id));
  return withOpenOrder;
}

/** The removals of one turn: each gets deleted, not_found, precondition_failed or open_order. */
export async function deleteTogether(
  client: PoolClient,
  removals: Removal[],
  failed: Map<number, unknown>,
  steps: SharedWriteSteps,
): Promise<DeletePetResult[]> {
  const rows = await lockInIdOrder(client, removals);
  const withOpenOrder = await openOrderPets(client, [...rows.keys()]);
  // The refusals in the order a removal alone gives them (deleteOne).
  const results: DeletePetResult[] = removals.map((r): DeletePetResult => {
    const row = rows.get(r.id);
    if (!row) return { kind: 'not_found' };
    const version = Number(row.version);
    if (r.precondition && !r.precondition(version)) return { kind: 'precondition_failed', version };
    if (withOpenOrder.has(r.id)) return { kind: 'open_order' };
    return { kind: 'deleted' };
  });
  const gone = removals.filter((_, k) => results[k]!.kind === 'deleted');
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
    gone.map((r) => {
      const { pet, version } = versioned(rows.get(r.id)!);
      return buildEvent('pet.deleted', { object: pet, version }, r.now);
    }),
  );
  // Other modules' rows that depended on the pets (applications), in this transaction: see within.ts.
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
  steps: SharedWriteSteps,
): Promise<UpdatePetResult[]> {
  const rows = await lockInIdOrder(client, changes);
  const categoryIds = [
    ...new Set(changes.flatMap((c) => (c.change.categoryId === undefined ? [] : [c.change.categoryId]))),
  ];
  const categories = new Set<number>();
  if (categoryIds.length > 0) {
    const found = await client.query<{ id: number }>({
      name: 'pets_categories_exist',
      text: SQL.categoriesExist,
      values: [categoryIds],
    });
    for (const { id } of found.rows) categories.add(Number(id));
  }
  const moving = changes.filter((c) => {
    const row = rows.get(c.id);
    return row !== undefined && c.change.status !== undefined && c.change.status !== row.status;
  });
  const withOpenOrder = await openOrderPets(
    client,
    moving.map((c) => c.id),
  );
  // The refusals in the order a change alone gives them (updateOne).
  const results: UpdatePetResult[] = changes.map((c): UpdatePetResult => {
    const row = rows.get(c.id);
    if (!row) return { kind: 'not_found' };
    const version = Number(row.version);
    if (c.precondition && !c.precondition(version)) return { kind: 'precondition_failed', version };
    if (c.change.categoryId !== undefined && !categories.has(c.change.categoryId)) {
      return { kind: 'unknown_category' };
    }
    if (withOpenOrder.has(c.id) && c.change.status !== undefined && c.change.status !== row.status) {
      return { kind: 'open_order' };
    }
    return { kind: 'updated', pet: versioned(row).pet, version };
  });
  const writes = changes.filter((_, k) => results[k]!.kind === 'updated');
  if (writes.length === 0) return results;
  const updated = await client.query<VersionedRow>({
    name: 'pets_update_all',
    text: SQL.updatePets,
    values: [
      writes.map((c) => c.id),
      writes.map((c) => c.change.name ?? null),
      writes.map((c) => c.change.categoryId ?? null),
      writes.map((c) => c.change.status ?? null),
    ],
  });
  const after = new Map(updated.rows.map((row) => [Number(row.id), versioned(row)]));
  const events = [];
  for (const [k, c] of changes.entries()) {
    if (results[k]!.kind !== 'updated') continue;
    const changed = after.get(c.id);
    // Unreachable while the rows are locked; kept so a lost row can never be reported as success.
    if (!changed) throw new Error(`pet ${c.id} locked but not updated`);
    const previous = previousValues(versioned(rows.get(c.id)!).pet, changed.pet);
    events.push(
      buildEvent('pet.updated', { object: changed.pet, previous, version: changed.version }, c.now),
    );
    results[k] = { kind: 'updated', ...changed };
  }
  await steps.events.appendAll(client, events);
  await afterEachWrite(results, (result) => result.kind === 'updated', steps.afterWrite, client, failed);
  return results;
}
