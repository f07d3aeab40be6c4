/** The photos' rules, shared by both backends (which do the I/O only). */
import type { AddOutcome, ChangeOutcome } from './repository.js';
import type { PhotoRecord } from './schemas.js';

/** The status each write answers, recorded with it for its replay. */
export const WRITE_STATUS = { add: 201, remove: 204, move: 200 } as const;

/** What a successful write records for replay: its photo under the write's status. */
export function recordOf(status: number) {
  return (result: AddOutcome | ChangeOutcome) =>
    result.kind === 'added' || result.kind === 'done' ? { status, body: result.photo } : undefined;
}

/** The photos of one pet whose positions `from` to `to` (both included) move by `by`. */
export interface Shift {
  from: number;
  to: number;
  by: 1 | -1;
}

/**
 * Adding a photo, given how many the pet holds (read under the backend's per-pet serialisation; undefined:
 * no such pet): refused at `max`, else it goes last, so positions stay 0..n-1.
 */
export function photoAddition(
  count: number | undefined,
  max: number,
): { kind: 'not_found' } | { kind: 'limit' } | { kind: 'insert'; position: number } {
  if (count === undefined) return { kind: 'not_found' };
  if (count >= max) return { kind: 'limit' };
  return { kind: 'insert', position: count };
}

/**
 * Removing a photo of a pet holding `count` (undefined: no such pet): the photos after it move one step
 * up, closing the gap it leaves.
 */
export function photoRemoval(
  count: number | undefined,
  photo: PhotoRecord | undefined,
): { kind: 'not_found' } | { kind: 'delete'; photo: PhotoRecord; shift: Shift | undefined } {
  if (count === undefined || !photo) return { kind: 'not_found' };
  const shift: Shift = { from: photo.position + 1, to: count - 1, by: -1 };
  return { kind: 'delete', photo, shift: shift.from <= shift.to ? shift : undefined };
}

/**
 * Moving a photo of a pet holding `count` to `position`, which must be one of the pet's (below `count`):
 * every photo between the old and the new place moves one step towards the old one.
 */
export function photoMove(
  count: number | undefined,
  photo: PhotoRecord | undefined,
  position: number,
):
  | { kind: 'not_found' }
  | { kind: 'bad_position'; count: number }
  | { kind: 'place'; photo: PhotoRecord; shift: Shift | undefined } {
  if (count === undefined || !photo) return { kind: 'not_found' };
  if (position >= count) return { kind: 'bad_position', count };
  const moved = { ...photo, position };
  if (position < photo.position) {
    return { kind: 'place', photo: moved, shift: { from: position, to: photo.position - 1, by: 1 } };
  }
  if (position > photo.position) {
    return { kind: 'place', photo: moved, shift: { from: photo.position + 1, to: position, by: -1 } };
  }
  return { kind: 'place', photo: moved, shift: undefined };
}
