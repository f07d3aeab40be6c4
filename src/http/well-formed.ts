/**
 * Strings are well-formed Unicode without NUL. JSON may spell a lone surrogate (`"\ud800"`), which JavaScript keeps in a
 * string but UTF-8 cannot encode: a database would store U+FFFD instead (so the record differs from what
 * the write answered) or keep the escape inside a stored JSON document, and every client decoding the
 * answer as UTF-8 would choke on it. JSON may also spell U+0000, which PostgreSQL's text cannot store (the write
 * failed there, and succeeded on SQLite). Such a body is refused as a whole with `400 validation_failed` naming
 * each field, before validation and before anything is stored, for every route at once.
 *
 * Query strings, paths and headers need no check: their percent-decoding and Latin-1 header bytes cannot
 * produce a surrogate (an invalid percent-encoding stays as it was written).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError, MAX_DETAILS, MAX_FIELD_LENGTH, type ErrorDetail } from './errors.js';

// With the `u` flag a surrogate pair is one code point, so only a surrogate without its partner matches.
// (String.prototype.isWellFormed is the same test, but the compile target's library predates it.)
const LONE_SURROGATE = /\p{Cs}/u;
const LONE_SURROGATES = /\p{Cs}/gu;
const NOT_WELL_FORMED = 'must be well-formed Unicode (no lone surrogate)';
// PostgreSQL's text cannot hold U+0000 (the write would fail), and no field of this API means one.
const NUL = '\u0000';
const HOLDS_NUL = 'must not contain U+0000 (NUL)';

/** True when `text` holds no lone surrogate. */
export function isWellFormed(text: string): boolean {
  return !LONE_SURROGATE.test(text);
}

/** `text` with each lone surrogate replaced by U+FFFD, as a UTF-8 encoder would write it. */
export function toWellFormed(text: string): string {
  return text.replace(LONE_SURROGATES, '\ufffd');
}

interface Node {
  value: unknown;
  parent: Node | undefined;
  key: string;
}

function pathOf(node: Node): string {
  const keys: string[] = [];
  // Walks up at most the nesting depth, which the body limit bounds; the name is cut to the field limit.
  for (let at: Node | undefined = node; at?.parent !== undefined; at = at.parent) keys.push(at.key);
  const path = keys.reverse().join('.') || 'body';
  return path.length > MAX_FIELD_LENGTH ? `${path.slice(0, MAX_FIELD_LENGTH - 1)}…` : path;
}

/**
 * The fields of a parsed JSON value holding a lone surrogate (in a string or in a member's name), the
 * first MAX_DETAILS of them. Iterative, so nesting depth costs no stack; the work is one visit per value,
 * which the body limit bounds.
 */
export function illFormedFields(body: unknown): ErrorDetail[] {
  const details: ErrorDetail[] = [];
  const stack: Node[] = [{ value: body, parent: undefined, key: '' }];
  while (stack.length > 0 && details.length < MAX_DETAILS) {
    const node = stack.pop()!;
    const { value } = node;
    if (typeof value === 'string') {
      if (!isWellFormed(value)) details.push({ field: pathOf(node), message: NOT_WELL_FORMED });
      else if (value.includes(NUL)) details.push({ field: pathOf(node), message: HOLDS_NUL });
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--)
        stack.push({ value: value[i], parent: node, key: String(i) });
    } else if (typeof value === 'object' && value !== null && !Buffer.isBuffer(value)) {
      const entries = Object.entries(value);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, member] = entries[i]!;
        if (isWellFormed(key) && !key.includes(NUL)) stack.push({ value: member, parent: node, key });
        else {
          const field = pathOf({
            value: member,
            parent: node,
            key: toWellFormed(key).replaceAll(NUL, '\ufffd'),
          });
          details.push({ field, message: 'has a name that is not well-formed Unicode or contains U+0000' });
        }
      }
    }
  }
  return details;
}

async function refuseIllFormedBody(request: FastifyRequest): Promise<void> {
  if (request.body === undefined || request.body === null || Buffer.isBuffer(request.body)) return;
  const details = illFormedFields(request.body);
  if (details.length === 0) return;
  throw new ApiError('validation_failed', {
    message: `Invalid request: ${details.map((d) => `${d.field} ${d.message}`).join('; ')}.`,
    details,
  });
}

/** Before any route's own hooks and its schema validation: every parsed body is checked once. */
export function registerWellFormedBodies(app: FastifyInstance): void {
  app.addHook('preValidation', refuseIllFormedBody);
}
