import { Type, type Static } from 'typebox';
import { ref } from '../../http/schemas.js';

export const Category = Type.Object(
  {
    id: Type.Integer({ format: 'int64' }),
    name: Type.String(),
  },
  { $id: 'Category', additionalProperties: false },
);
export type Category = Static<typeof Category>;
export const Categories = Type.Array(ref(Category));
