/**
 * searchListings' query string, read by hand rather than by the schema's validator alone: comma-separated
 * lists, parameters that depend on each other (`radiusKm` and `sort=distance` need `near`) and a 400 that
 * names every bad or unknown parameter at once, not only the first one found.
 */
import { foldText } from '../../db/fold.js';
import { invalidCursor, type CursorBinding, type Cursors } from '../../http/cursors.js';
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

/**
 * The longest value of each parameter (the schema's maxLength, read here since this parser runs before the
 * schema's validator): nothing below looks at more than this, so a 16 KiB value costs what 200 characters do.
 */
export const MAX_VALUE_LENGTH: Readonly<Record<string, number>> = {
  q: 200,
  near: 60,
  radiusKm: 20,
  sort: 20,
  limit: 20,
  cursor: 600,
};
/** A comma-separated list or a flag: the schema's 200. */
const DEFAULT_VALUE_LENGTH = 200;

/**
 * The words of `q` as the word index holds them: folded like the indexed text (src/db/fold.ts: compatibility
 * forms, accents, case), then split on anything but letters and digits.
 */
export function wordsOf(q: string): string[] {
  return foldText(q)
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);
}

/** What a listing cursor is bound to: the path and every parameter but `cursor` and `limit`, as given. */
export const LISTINGS_PATH = '/v1/listings';
/** The longest listing cursor (a `name` cursor holds a name of up to 100 characters, 4 bytes each). */
export const MAX_LISTING_CURSOR_LENGTH = MAX_VALUE_LENGTH.cursor!;

export function parseListingQuery(raw: Record<string, unknown>, cursors: Cursors): ListingQuery {
  const details: ErrorDetail[] = [];
  const bad = (field: string, message: string) => details.push({ field, message });
  const text: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (!KNOWN.has(name)) bad(name, 'is not a known parameter');
    else if (typeof value !== 'string') bad(name, 'must be given once');
    else if (value.length > (MAX_VALUE_LENGTH[name] ?? DEFAULT_VALUE_LENGTH) && name !== 'cursor')
      bad(name, `must be at most ${MAX_VALUE_LENGTH[name] ?? DEFAULT_VALUE_LENGTH} characters`);
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
    // The length was checked above, before folding, which costs time in proportion (NFKC expands a
    // character at most 18-fold, so the folded text stays bounded too).
    const words = wordsOf(text.q);
    if (words.length === 0) bad('q', 'must contain at least one word');
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
  if (details.length > 0) {
    throw new ApiError('validation_failed', {
      message: `Invalid request: ${details.map((d) => `${d.field} ${d.message}`).join('; ')}.`,
      details: details,
    });
  }
  for (const [name, value] of Object.entries(text)) {
    if (name !== 'cursor' && name !== 'limit') query.filters[name] = value;
  }
  // Last, once every other parameter is known good: the cursor is bound to them (and to the sort).
  if (text.cursor !== undefined) query.after = decodeListingCursor(cursors, query, text.cursor);
  return query;
}

function bindingOf(query: ListingQuery): CursorBinding {
  return { path: LISTINGS_PATH, filters: query.filters };
}

/** The cursor after `after` in the query's order: the id and the sort's key, bound to the query. */
export function encodeListingCursor(cursors: Cursors, query: ListingQuery, after: After): string {
  const values: (string | number)[] = [after.id];
  if (query.sort === 'name') values.push(after.name!);
  if (query.sort === 'distance') values.push(after.distance!, after.span ?? 0);
  return cursors.issue(bindingOf(query), values);
}

/**
 * Where the page after `cursor` starts, or `400 invalid_cursor`: the cursor must be this service's for
 * exactly this query, and (even then) hold an id, a name, a distance and a span in range, so no value a
 * cursor carries can steer the search's work (a span of 1e-300 km once made the rings of a search by
 * distance never grow).
 */
export function decodeListingCursor(cursors: Cursors, query: ListingQuery, cursor: string): After {
  const values = cursors.read(bindingOf(query), cursor, MAX_LISTING_CURSOR_LENGTH);
  const [id, key, span] = values;
  if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1) throw invalidCursor();
  if (query.sort === 'name') {
    if (values.length !== 2 || typeof key !== 'string' || key.length === 0 || key.length > 400) {
      throw invalidCursor();
    }
    return { id, name: key };
  }
  if (query.sort === 'distance') {
    const radius = query.near!.radiusKm;
    const inRange = (n: unknown): n is number =>
      typeof n === 'number' && Number.isFinite(n) && n >= 0 && n <= radius;
    if (values.length !== 3 || !inRange(key) || !inRange(span)) throw invalidCursor();
    // -0 would be a distinct page-cache key for the same page; it is 0.
    return { id, distance: key + 0, span: span + 0 };
  }
  if (values.length !== 1) throw invalidCursor();
  return { id };
}
