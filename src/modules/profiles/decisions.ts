/** The profiles' rules, shared by both backends (which do the I/O only). */
import { buildEvent, type NewEvent } from '../events/index.js';
import type {
  ProfileDoc,
  ProfileRecord,
  ProfileChange,
  ProfileWrite,
  ProfileWriteResult,
} from './repository.js';
import type { PetProfile } from './schemas.js';

/** The columns search filters on (a function: the backends' modules read it while this one loads). */
export function searchColumns(): readonly string[] {
  return SEARCH_COLUMN_NAMES;
}

/** A document's values of searchColumns(), in that order. */
export function searchValues(doc: ProfileDoc): (string | number | boolean | null)[] {
  const tri = (v: boolean | null | undefined) => (v === undefined ? null : v);
  return [
    doc.sex ?? null,
    doc.ageGroup ?? null,
    doc.size ?? null,
    tri(doc.goodWith?.children),
    tri(doc.goodWith?.dogs),
    tri(doc.goodWith?.cats),
    tri(doc.houseTrained),
    tri(doc.specialNeeds),
    doc.breed ?? null,
    doc.description ?? null,
    doc.location?.latitude ?? null,
    doc.location?.longitude ?? null,
  ];
}

/** The `pet.profile_updated` event: the profile after the change, the changed fields' old values. */
function profileEvent(petId: number, before: ProfileDoc, after: ProfileRecord, now: number): NewEvent {
  const previous: Record<string, unknown> = {};
  const old = before as Record<string, unknown>;
  const next = after.doc as Record<string, unknown>;
  for (const field of FIELD_ORDER) {
    if (JSON.stringify(old[field]) !== JSON.stringify(next[field])) previous[field] = old[field] ?? null;
  }
  return buildEvent(
    'pet.profile_updated',
    { object: { id: petId, profile: renderProfile(after) }, previous, version: after.version },
    now,
  );
}

/** What an idempotent profile write records: its replay answers the record as it was (`Replayed`). */
export function recordOf(result: ProfileWriteResult): { status: number; body: ProfileRecord } | undefined {
  return result.kind === 'done' ? { status: 200, body: result.record } : undefined;
}

/**
 * A profile write, given the profile as read in its transaction (undefined: no such pet): the refusal, or
 * the record to store (version + 1, changed now) and the `pet.profile_updated` event to append with it.
 */
export function profileWrite(
  current: ProfileRecord | undefined,
  input: ProfileWrite,
): Extract<ProfileWriteResult, { kind: 'not_found' | 'precondition_failed' | 'invalid' }> | ProfileStore {
  if (!current) return { kind: 'not_found' };
  if (input.ifMatch && !input.ifMatch(current.version)) {
    return { kind: 'precondition_failed', version: current.version };
  }
  const next = applyChange(input.change, current.doc);
  if (!('doc' in next)) return next;
  const record: ProfileRecord = { doc: next.doc, version: current.version + 1, updatedAt: input.now };
  return { kind: 'store', record, event: profileEvent(input.petId, current.doc, record, input.now) };
}

/** What a profile write stores: the record, and the event announcing it. */
export interface ProfileStore {
  kind: 'store';
  record: ProfileRecord;
  event: NewEvent;
}

/** Applies a change to the current document: the new one, or the reason it is refused. */
function applyChange(
  change: ProfileChange,
  current: ProfileDoc,
): { doc: ProfileDoc } | { kind: 'invalid'; field: string; message: string } {
  const next = change(current);
  if ('invalid' in next && typeof next.invalid === 'string') {
    return { kind: 'invalid', field: next.invalid, message: (next as { message: string }).message };
  }
  return { doc: canonical(next as Record<string, unknown>) };
}

const FIELD_ORDER = [
  'description',
  'breed',
  'sex',
  'ageGroup',
  'birthDate',
  'size',
  'colors',
  'goodWith',
  'houseTrained',
  'specialNeeds',
  'location',
] as const;

/** The document in a fixed field order, without `updatedAt` or absent fields, so equal documents are equal bytes. */
export function canonical(doc: Record<string, unknown>): ProfileDoc {
  const out: Record<string, unknown> = {};
  for (const field of FIELD_ORDER) {
    const value = doc[field];
    if (value === undefined) continue;
    if (field === 'goodWith' && value !== null) {
      out[field] = pick(value as Record<string, unknown>, ['children', 'dogs', 'cats']);
    } else if (field === 'location' && value !== null) {
      out[field] = pick(value as Record<string, unknown>, ['postalCode', 'latitude', 'longitude']);
    } else out[field] = value;
  }
  return out as ProfileDoc;
}

function pick(value: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of keys) if (value[key] !== undefined) out[key] = value[key];
  return out;
}

/** RFC 7396: members of `patch` replace those of `target`, `null` removes one, objects merge recursively. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) return patch;
  const base =
    typeof target === 'object' && target !== null && !Array.isArray(target)
      ? { ...(target as Record<string, unknown>) }
      : {};
  for (const [key, value] of Object.entries(patch as Record<string, unknown>)) {
    if (value === null) delete base[key];
    else base[key] = mergePatch(base[key], value);
  }
  return base;
}

/** What a whole profile must satisfy beyond each field's own schema; undefined when it does. */
export function profileProblem(
  doc: ProfileDoc,
  today: string,
): { invalid: string; message: string } | undefined {
  const location = doc.location;
  if (location && (location.latitude === undefined) !== (location.longitude === undefined)) {
    const missing = location.latitude === undefined ? 'latitude' : 'longitude';
    return { invalid: `location.${missing}`, message: 'is required with the other coordinate' };
  }
  if (doc.birthDate !== undefined && doc.birthDate > today) {
    return { invalid: 'birthDate', message: 'must not be in the future' };
  }
  return undefined;
}

const SEARCH_COLUMN_NAMES = [
  'sex',
  'age_group',
  'size',
  'good_children',
  'good_dogs',
  'good_cats',
  'house_trained',
  'special_needs',
  'breed',
  'description',
  'latitude',
  'longitude',
] as const;

/** The API's view of a stored profile. */
export function renderProfile(record: Pick<ProfileRecord, 'doc' | 'updatedAt'>): PetProfile {
  return {
    ...record.doc,
    updatedAt: record.updatedAt === null ? null : new Date(record.updatedAt).toISOString(),
  };
}
