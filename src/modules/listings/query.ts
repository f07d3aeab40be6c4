/**
 * searchListings' query string, read by hand rather than by the schema's validator alone: comma-separated
 * lists, parameters that depend on each other (`radiusKm` and `sort=distance` need `near`) and a 400 that
 * names every bad or unknown parameter at once, not only the first one found.
 */
import { ApiError, type ErrorDetail } from '../../http/errors.js';
import { PET_STATUSES, type PetStatus } from '../pets/index.js';
import { AGE_GROUPS, SEXES, SIZES } from '../profiles/index.js';
import { BOOLEAN_FILTERS } from './search-sql.js';

export const SORTS = ['newest', 'oldest', 'distance', 'name'] as const;
export type Sort = (typeof SORTS)[number];

type BooleanFilter = keyof typeof BOOLEAN_FILTERS;

export const LIST_FILTERS = { sex: SEXES, ageGroup: AGE_GROUPS, size: SIZES } as const;
type ListFilter = keyof typeof LIST_FILTERS;

export const MAX_WORDS = 10;
export const DEFAULT_RADIUS_KM = 50;

/**
 * Where a page starts: after this pet in the sort's order (the sort key of that pet, and its id). For
 * `distance`, also the previous page's span of distances: how far the next page's first ring reaches.
 */
export type After = { id: number; name?: string; distance?: number; span?: number };

export interface ListingQuery {
  status: PetStatus[];
  categoryId?: number[];
  sex?: string[];
  ageGroup?: string[];
  size?: string[];
  booleans: Partial<Record<BooleanFilter, boolean>>;
  hasPhotos?: boolean;
  /** The words of `q`, each to be matched. */
  words?: string[];
  near?: { latitude: number; longitude: number; radiusKm: number };
  sort: Sort;
  limit: number;
  after?: After;
  /** The query's parameters as given (cursor and limit aside), to repeat in the next page's link. */
  filters: Record<string, string>;
}

const KNOWN = new Set([
  'status',
  'categoryId',
  ...Object.keys(LIST_FILTERS),
  ...Object.keys(BOOLEAN_FILTERS),
  'hasPhotos',
  'q',
  'near',
  'radiusKm',
  'sort',
  'limit',
  'cursor',
]);

const NUMBER = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?$/;

/** Splits `q` into words as the word index does: letters and digits, anything else separates. */
export function wordsOf(q: string): string[] {
  return q.split(/[^\p{L}\p{N}]+/u).filter(Boolean);
}

export function parseListingQuery(raw: Record<string, unknown>): ListingQuery {
  const details: ErrorDetail[] = [];
  const bad = (field: string, message: string) => details.push({ field, message });
  const text: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (!KNOWN.has(name)) bad(name, 'is not a known parameter');
    else if (typeof value !== 'string') bad(name, 'must be given once');
    else text[name] = value;
  }

  const list = <T extends string>(name: string, allowed: readonly T[]): T[] | undefined => {
    const value = text[name];
    if (value === undefined) return undefined;
    const items = value.split(',');
    const wrong = items.filter((item) => !allowed.includes(item as T));
    if (wrong.length > 0) bad(name, `must be a comma-separated list of: ${allowed.join(', ')}`);
    return [...new Set(items)] as T[];
  };
  const boolean = (name: string): boolean | undefined => {
    const value = text[name];
    if (value === undefined) return undefined;
    if (value !== 'true' && value !== 'false') bad(name, 'must be true or false');
    return value === 'true';
  };

  const query: ListingQuery = {
    status: list('status', PET_STATUSES) ?? ['available'],
    booleans: {},
    sort: 'newest',
    limit: 20,
    filters: {},
  };
  if (text.categoryId !== undefined) {
    const ids = text.categoryId.split(',').map((id) => (/^[1-9][0-9]{0,15}$/.test(id) ? Number(id) : NaN));
    if (ids.some((id) => !Number.isSafeInteger(id))) {
      bad('categoryId', 'must be a comma-separated list of positive integers');
    }
    query.categoryId = [...new Set(ids)];
  }
  for (const name of Object.keys(LIST_FILTERS) as ListFilter[]) {
    const values = list(name, LIST_FILTERS[name]);
    if (values) query[name] = values;
  }
  for (const name of Object.keys(BOOLEAN_FILTERS) as BooleanFilter[]) {
    const value = boolean(name);
    if (value !== undefined) query.booleans[name] = value;
  }
  query.hasPhotos = boolean('hasPhotos');
  if (text.q !== undefined) {
    const words = wordsOf(text.q);
    if (text.q.length > 200) bad('q', 'must be at most 200 characters');
    else if (words.length === 0) bad('q', 'must contain at least one word');
    else if (words.length > MAX_WORDS) bad('q', `must contain at most ${MAX_WORDS} words`);
    query.words = words;
  }
  let radiusKm = DEFAULT_RADIUS_KM;
  if (text.radiusKm !== undefined) {
    radiusKm = NUMBER.test(text.radiusKm) ? Number(text.radiusKm) : NaN;
    if (!(radiusKm >= 1 && radiusKm <= 500)) bad('radiusKm', 'must be a number from 1 to 500');
    if (text.near === undefined) bad('radiusKm', 'needs near');
  }
  if (text.near !== undefined) {
    const parts = text.near.split(',');
    const [latitude, longitude] = parts.map((part) => (NUMBER.test(part.trim()) ? Number(part.trim()) : NaN));
    if (
      parts.length !== 2 ||
      !(latitude! >= -90 && latitude! <= 90) ||
      !(longitude! >= -180 && longitude! <= 180)
    ) {
      bad('near', 'must be "<latitude>,<longitude>" (−90..90, −180..180)');
    } else query.near = { latitude: latitude!, longitude: longitude!, radiusKm };
  }
  if (text.sort !== undefined) {
    if (!SORTS.includes(text.sort as Sort)) bad('sort', `must be one of: ${SORTS.join(', ')}`);
    else if (text.sort === 'distance' && text.near === undefined) bad('sort', 'distance needs near');
    else query.sort = text.sort as Sort;
  }
  if (text.limit !== undefined) {
    const limit = /^[1-9][0-9]{0,2}$/.test(text.limit) ? Number(text.limit) : NaN;
    if (!(limit >= 1 && limit <= 100)) bad('limit', 'must be an integer from 1 to 100');
    else query.limit = limit;
  }
  if (details.length === 0 && text.cursor !== undefined) {
    query.after = decodeListingCursor(text.cursor, query.sort);
    if (!query.after) bad('cursor', 'is not a cursor this service issued for this sort');
  }
  if (details.length > 0) {
    throw new ApiError('validation_failed', {
      message: `Invalid request: ${details.map((d) => `${d.field} ${d.message}`).join('; ')}.`,
      details: details,
    });
  }
  for (const [name, value] of Object.entries(text)) {
    if (name !== 'cursor' && name !== 'limit') query.filters[name] = value;
  }
  return query;
}

/** The cursor after `after` in `sort`'s order: the sort, the key and the id, opaque to clients. */
export function encodeListingCursor(sort: Sort, after: After): string {
  const key = sort === 'name' ? after.name : sort === 'distance' ? after.distance : undefined;
  const value: unknown[] = key === undefined ? [sort, after.id] : [sort, after.id, key];
  if (sort === 'distance' && after.span !== undefined) value.push(after.span);
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

export function decodeListingCursor(cursor: string, sort: Sort): After | undefined {
  if (cursor.length > 600) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!Array.isArray(value) || value[0] !== sort) return undefined;
  const id = value[1] as unknown;
  if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1) return undefined;
  if (sort === 'name') return typeof value[2] === 'string' ? { id, name: value[2] } : undefined;
  if (sort === 'distance') {
    if (typeof value[2] !== 'number' || !(value[2] >= 0)) return undefined;
    // The span is a hint (how far the first ring reaches), absent from cursors issued before it.
    const span = value[3] as unknown;
    return typeof span === 'number' && span >= 0 && Number.isFinite(span)
      ? { id, distance: value[2], span }
      : { id, distance: value[2] };
  }
  return value.length === 2 ? { id } : undefined;
}
