/**
 * The one cursor codec of every list: a cursor is `<payload>.<tag>`, the payload a JSON array of the sort
 * key (ids, a name, a distance), base64url; the tag an HMAC-SHA256 (truncated to 128 bits) over the payload
 * AND the query the cursor was issued for (the list's path and the parameters that must stay the same), with
 * a secret every instance shares (CURSOR_SECRET, else one kept in the database: db/secrets.ts).
 *
 * Why: a cursor is client input that steers a query's work (where keyset paging starts, how far a search by
 * distance reaches). A cursor this service did not issue for this query, or one altered by a bit, is refused
 * with `400 invalid_cursor` before any database work; and what a valid one holds is still checked (finite
 * numbers in range, safe integers), so a leaked secret does not turn into unbounded work either.
 */
import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import { ApiError } from './errors.js';

/** What a cursor is bound to: the list's path and the parameters a next page must repeat. */
export interface CursorBinding {
  path: string;
  filters?: Readonly<Record<string, string | number | undefined>>;
}

export type CursorValue = string | number;

/** Bytes of the HMAC kept: 128 bits, 22 base64url characters. */
const TAG_BYTES = 16;
const TAG_CHARS = 22;
/** The longest cursor read at all (a list's schema may state less); beyond it no work is done. */
export const MAX_CURSOR_LENGTH = 1024;
/** The most values a payload may hold: no list's sort key has more. */
const MAX_VALUES = 4;
// Anchored, one character class then a fixed-length tail: linear in the input, no backtracking.
const SHAPE = /^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{22})$/;
/** The version of the format and of what the tag covers; a new one makes every old cursor invalid. */
const DOMAIN = 'cursor/v1';
/** How many verified cursors `read` remembers (each ≤ ~1.3 KB with its binding: ≤ ~5 MB at worst). */
const VERIFIED_MAX = 4_096;

/** The one answer to every cursor that cannot be used, whatever is wrong with it (no echo of the value). */
export function invalidCursor(): ApiError {
  return new ApiError('invalid_cursor', {
    details: [{ field: 'cursor', message: 'is not a cursor this service issued for this query' }],
  });
}

/** The binding as one string: the path, then each given parameter (sorted by name) as `name=value`. */
function bindingText(binding: CursorBinding): string {
  const entries = Object.entries(binding.filters ?? {})
    .filter((entry): entry is [string, string | number] => entry[1] !== undefined)
    .map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(String(value))}`)
    .sort();
  return `${binding.path}?${entries.join('&')}`;
}

export class Cursors {
  /**
   * Imported once: createHmac given raw bytes imports them as a key on every call, which cost ~13 µs of the
   * ~15 µs an HMAC took (a KeyObject: ~2 µs), on every page read with a cursor and every page that issues one.
   */
  private readonly key: KeyObject;
  /**
   * Cursors already verified, by binding and cursor text, with their values. Creating an Hmac object is most
   * of a cursor read (~6 µs of ~8 on Node 24, more than the cached page it unlocks), and a client paging
   * through a list, or many clients on one popular page, send the same cursor again and again. Only
   * cursors that passed every check are kept, so no invalid input is remembered; the map is emptied when full
   * (bounded memory, no bookkeeping on a hit). The same text always verifies the same way, so remembering is
   * exact.
   */
  private readonly verified = new Map<string, readonly CursorValue[]>();

  /** `secret`: CURSOR_SECRET or the database's; at least 32 bytes (config.ts and db/secrets.ts see to it). */
  constructor(secret: string | Uint8Array) {
    const bytes = Buffer.from(typeof secret === 'string' ? Buffer.from(secret, 'utf8') : secret);
    if (bytes.length < 32) throw new Error('the cursor secret must be at least 32 bytes');
    this.key = createSecretKey(bytes);
  }

  private tag(bound: string, payload: string): Buffer {
    return createHmac('sha256', this.key)
      .update(`${DOMAIN}\n${bound}\n${payload}`)
      .digest()
      .subarray(0, TAG_BYTES);
  }

  /** A cursor for `values`, valid only with `binding`. */
  issue(binding: CursorBinding, values: readonly CursorValue[]): string {
    const payload = Buffer.from(JSON.stringify(values)).toString('base64url');
    return `${payload}.${this.tag(bindingText(binding), payload).toString('base64url')}`;
  }

  /**
   * The values of a cursor issued with `binding`, or `400 invalid_cursor`. The work is bounded by
   * MAX_CURSOR_LENGTH: one regular-expression match, one HMAC, one JSON.parse of at most that much.
   * The caller still checks each value's type and range (readId does for the lists paged by id).
   */
  read(binding: CursorBinding, cursor: string, maxLength = MAX_CURSOR_LENGTH): readonly CursorValue[] {
    if (typeof cursor !== 'string' || cursor.length > Math.min(maxLength, MAX_CURSOR_LENGTH)) {
      throw invalidCursor();
    }
    const bound = bindingText(binding);
    const memo = `${bound}\n${cursor}`;
    const known = this.verified.get(memo);
    if (known !== undefined) return known;
    const values = this.verify(bound, cursor);
    if (this.verified.size >= VERIFIED_MAX) this.verified.clear();
    this.verified.set(memo, values);
    return values;
  }

  private verify(bound: string, cursor: string): readonly CursorValue[] {
    const match = SHAPE.exec(cursor);
    if (!match) throw invalidCursor();
    const [, payload, tag] = match as unknown as [string, string, string];
    const given = Buffer.from(tag, 'base64url');
    // A 22-character tag may carry 2 stray bits in its last character: compare the re-encoding too.
    if (given.length !== TAG_BYTES || given.toString('base64url') !== tag || tag.length !== TAG_CHARS) {
      throw invalidCursor();
    }
    if (!timingSafeEqual(given, this.tag(bound, payload))) throw invalidCursor();
    let values: unknown;
    try {
      values = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      throw invalidCursor();
    }
    if (
      !Array.isArray(values) ||
      values.length === 0 ||
      values.length > MAX_VALUES ||
      !values.every((v) => typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v)))
    ) {
      throw invalidCursor();
    }
    return Object.freeze(values as CursorValue[]);
  }

  /** A cursor after the row with this id (lists ordered by id). */
  issueId(binding: CursorBinding, id: number): string {
    return this.issue(binding, [id]);
  }

  /** The id a cursor of a list ordered by id stands for: a safe integer ≥ 1, or `400 invalid_cursor`. */
  readId(binding: CursorBinding, cursor: string, maxLength?: number): number {
    const values = this.read(binding, cursor, maxLength);
    const id = values[0];
    if (values.length !== 1 || typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1) {
      throw invalidCursor();
    }
    return id;
  }
}
