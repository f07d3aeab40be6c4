import { Type, type Static } from 'typebox';
import { issuedId, ref } from '../../http/schemas.js';

export const Category = Type.Object(
  {
    id: issuedId("The category id, for a pet's `categoryId`.", 1),
    name: Type.String({
      minLength: 1,
      maxLength: 100,
      pattern: '^[^\\p{Cc}]+$',
      description: 'The category name.',
      example: 'dogs',
    }),
  },
  {
    $id: 'Category',
    additionalProperties: false,
    description: 'A kind of animal.',
    example: { id: 1, name: 'dogs' },
  },
);
export type Category = Static<typeof Category>;
export const Categories = Type.Array(ref(Category), { maxItems: 1000 });
