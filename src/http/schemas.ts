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
