/** A photo's row as both backends read it, and how a recorded outcome is answered again. */
import { settleIdempotent, type Idempotent } from '../../db/idempotency/records.js';
import type { PhotoWrite, AddOutcome, ChangeOutcome } from './repository.js';

export function settlePhoto<T>(outcome: Idempotent<T>): PhotoWrite<T> {
  return settleIdempotent(outcome, (status, body) => ({ kind: 'replayed' as const, status, body }));
}

/** What a successful write records for replay. */
export function recordOf(status: number) {
  return (result: AddOutcome | ChangeOutcome) =>
    result.kind === 'added' || result.kind === 'done' ? { status, body: result.photo } : undefined;
}

export const PHOTO_COLUMNS = 'id, pet_id AS "petId", position, width, height, created_at AS "createdAt"';
