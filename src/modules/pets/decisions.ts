/**
 * The pets' rules, once for the three ways a change or a removal is written (SQLite; PostgreSQL one write in
 * its transaction; PostgreSQL a turn's writes in one shared transaction, batched-writes.postgres.ts): each
 * decision is a pure function of the rows its store read (locked) and the request, returning the row to
 * write and the event to append, or the refusal. The stores do I/O only: they read the pet, then what
 * `updateReads` or `deleteReads` asks, then write what the decision says. A creation's only refusal (an
 * unknown category) is the insert's own condition; what it appends is `createdEvent`.
 */
import { buildEvent, previousValues, type NewEvent } from '../events/index.js';
import type { DeletePetResult, PetChange, UpdatePetResult, VersionedPet, VersionTest } from './repository.js';
import type { Pet } from './schemas.js';

export interface UpdateRequest {
  change: PetChange;
  /** If-Match, tested on the version read. */
  precondition: VersionTest | undefined;
  now: number;
}

export interface DeleteRequest {
  precondition: VersionTest | undefined;
  now: number;
}

/** What a write needs read besides the pet: nothing when the pet alone decides. */
export interface Reads {
  /** The category the change names, whose existence decides. */
  category?: number;
  /** Whether the pet is held (petHolds: an open order), which refuses a status change and a removal. */
  hold: boolean;
}

/** The answers to Reads; an answer not asked for is left out. */
export interface Found {
  categoryExists?: boolean;
  held?: boolean;
}

type Refusal<R> = Extract<
  R,
  { kind: 'not_found' | 'precondition_failed' | 'unknown_category' | 'open_order' }
>;

/**
 * The pet as changed and its pet.updated, or the refusal; `version` is the one read, which the write is
 * conditional on (`after.version` is the next).
 */
export type UpdateDecision =
  { kind: 'update'; version: number; after: VersionedPet; event: NewEvent } | Refusal<UpdatePetResult>;

/** The version to delete and the pet.deleted event, or the refusal. */
export type DeleteDecision = { kind: 'delete'; version: number; event: NewEvent } | Refusal<DeletePetResult>;

/** A new pet's event: pet.created, at version 1 (the trace context of the request when not given). */
export function createdEvent(pet: Pet, now: number, traceparent?: string | null): NewEvent {
  return buildEvent('pet.created', { object: pet, version: 1 }, now, null, traceparent);
}

/** The refusals the pet alone gives, first: it is gone, or not at the version the precondition wants. */
function refusedByPet(
  current: VersionedPet | undefined,
  precondition: VersionTest | undefined,
): Refusal<DeletePetResult> | undefined {
  if (!current) return { kind: 'not_found' };
  if (precondition && !precondition(current.version)) {
    return { kind: 'precondition_failed', version: current.version };
  }
  return undefined;
}

/** A status change: the change names a status other than the pet's. */
function movesStatus(current: VersionedPet, change: PetChange): boolean {
  return change.status !== undefined && change.status !== current.pet.status;
}

/** Fails loudly when a store did not read what the decision needs (a bug, never a client's mistake). */
function answer(value: boolean | undefined, what: string): boolean {
  if (value === undefined) throw new Error(`pets: ${what} was not read`);
  return value;
}

export function updateReads(current: VersionedPet | undefined, request: UpdateRequest): Reads {
  if (!current || refusedByPet(current, request.precondition)) return { hold: false };
  return { category: request.change.categoryId, hold: movesStatus(current, request.change) };
}

/**
 * A change (PATCH), in the order its refusals are given: not_found, precondition_failed, unknown_category,
 * open_order (only a status change is refused while the pet is held: its name and category may change).
 */
export function decideUpdate(
  current: VersionedPet | undefined,
  request: UpdateRequest,
  found: Found,
): UpdateDecision {
  const refused = refusedByPet(current, request.precondition);
  if (refused || !current) return refused ?? { kind: 'not_found' };
  const { change } = request;
  if (change.categoryId !== undefined && !answer(found.categoryExists, 'the category')) {
    return { kind: 'unknown_category' };
  }
  if (movesStatus(current, change) && answer(found.held, 'the hold')) return { kind: 'open_order' };
  const before = current.pet;
  // Built field by field: the pet keeps one key order (its JSON) and a field the patch leaves out stays.
  const pet: Pet = {
    id: before.id,
    name: change.name ?? before.name,
    categoryId: change.categoryId ?? before.categoryId,
    status: change.status ?? before.status,
  };
  const after = { pet, version: current.version + 1 };
  const previous = previousValues(before, pet);
  const event = buildEvent('pet.updated', { object: pet, previous, version: after.version }, request.now);
  return { kind: 'update', version: current.version, after, event };
}

export function deleteReads(current: VersionedPet | undefined, request: DeleteRequest): Reads {
  return { hold: current !== undefined && !refusedByPet(current, request.precondition) };
}

/** A removal (DELETE): not_found, precondition_failed, open_order while the pet is held; else the pet goes. */
export function decideDelete(
  current: VersionedPet | undefined,
  request: DeleteRequest,
  found: Found,
): DeleteDecision {
  const refused = refusedByPet(current, request.precondition);
  if (refused || !current) return refused ?? { kind: 'not_found' };
  if (answer(found.held, 'the hold')) return { kind: 'open_order' };
  const { pet, version } = current;
  return { kind: 'delete', version, event: buildEvent('pet.deleted', { object: pet, version }, request.now) };
}
