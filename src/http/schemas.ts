/** Schema pieces every module uses: id bounds and references to component schemas. */
import { Type, type Static, type TSchema, type TUnsafe } from 'typebox';

/** Ids are int64 in the contract; the service issues them within JavaScript's exact integer range. */
export const MAX_ID = Number.MAX_SAFE_INTEGER;

/**
 * A `$ref` to a component schema (one with `$id`, registered once by the app: see `components` of a
 * module). Validation, serialisation and the OpenAPI document all resolve it, so the document says
 * `#/components/schemas/<id>` instead of inlining a copy; the static type is still the component's.
 */
export function ref<T extends TSchema>(schema: T): TUnsafe<Static<T>> {
  const id = (schema as { $id?: unknown }).$id;
  if (typeof id !== 'string') throw new Error('ref() needs a schema with an $id');
  return Type.Unsafe<Static<T>>({ $ref: `${id}#` });
}

/**
 * The largest int64, the bound of ids a client may send in a path (a well-formed id beyond what the service
 * issued is unknown, 404, not malformed). As a double it reads 2^63, the same bound the `int64` format checks.
 */
export const INT64_MAX = 2 ** 63 - 1;

/** An id the service issued (1..MAX_ID), as it appears in response bodies. */
export function issuedId(description: string, example: number) {
  return Type.Integer({ format: 'int64', minimum: 1, maximum: MAX_ID, description, example });
}

/** An id in a path: any positive int64 is well-formed. */
export function pathId(description: string, example: number) {
  return Type.Integer({ format: 'int64', minimum: 1, maximum: INT64_MAX, description, example });
}

/** An RFC 3339 UTC instant as the service writes it (`Date.prototype.toISOString`, 24 characters). */
export function timestamp(description: string) {
  return Type.String({
    format: 'date-time',
    maxLength: 30,
    description,
    example: '2026-06-15T12:00:30.000Z',
  });
}

/**
 * The query of an operation that takes no parameters: like every other, an unknown one is a 400 rather than
 * silently ignored (a misspelt filter must not look like it worked).
 */
export const NoQuery = Type.Object({}, { additionalProperties: false });
