/**
 * The pets module's schemas. They drive request validation, response serialization, the TypeScript types
 * and the OpenAPI document; `Pet` and `NewPet` are components, referenced with `$ref` by the routes.
 */
import { Type, type Static } from 'typebox';
import { pageQuery } from '../../http/paging.js';
import { issuedId, MAX_ID, pathId, ref } from '../../http/schemas.js';

export const PET_STATUSES = ['available', 'pending', 'sold'] as const;
export type PetStatus = (typeof PET_STATUSES)[number];

export const MAX_NAME_LENGTH = 100;

export const PetStatusSchema = Type.Unsafe<PetStatus>({
  type: 'string',
  enum: [...PET_STATUSES],
  description: 'Availability status.',
  example: 'available',
});

// No control characters (C0, DEL, C1) and no lone surrogates, which could not be stored exactly as sent;
// at least one non-space character.
const NAME_PATTERN = '^(?=[\\s\\S]*\\S)[^\\p{Cc}\\p{Cs}]+$';

export const NewPet = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: MAX_NAME_LENGTH,
      pattern: NAME_PATTERN,
      description:
        "The animal's name: 1-100 characters, not blank, no control characters. Stored and returned exactly as sent.",
      example: 'Rex',
    }),
    categoryId: Type.Integer({
      format: 'int64',
      minimum: 1,
      maximum: MAX_ID,
      description:
        'Identifier of an existing category (see GET /v1/categories). Unknown ids are rejected with 400.',
      example: 1,
    }),
    status: Type.Optional({
      ...PetStatusSchema,
      description: 'Availability status. Defaults to `available`.',
    }),
  },
  {
    $id: 'NewPet',
    additionalProperties: false,
    description: 'An animal to add. Unknown fields, `id` included, are rejected.',
    example: { name: 'Rex', categoryId: 1, status: 'available' },
  },
);
export type NewPet = Static<typeof NewPet>;

export const Pet = Type.Object(
  {
    id: issuedId('Unique identifier assigned by the service.', 42),
    name: Type.String({
      minLength: 1,
      maxLength: MAX_NAME_LENGTH,
      pattern: NAME_PATTERN,
      description: "The animal's name.",
      example: 'Rex',
    }),
    categoryId: issuedId('Identifier of the category the animal belongs to.', 1),
    status: PetStatusSchema,
  },
  {
    $id: 'Pet',
    additionalProperties: false,
    description: 'An animal up for adoption.',
    example: { id: 42, name: 'Rex', categoryId: 1, status: 'available' },
  },
);
export type Pet = Static<typeof Pet>;

export const Pets = Type.Array(ref(Pet), {
  maxItems: 100,
  description: 'A page of pets (at most `limit`), ordered by id ascending.',
});

export const ListPetsQuery = Type.Object(
  {
    ...pageQuery('the same `status`'),
    status: Type.Optional({
      ...PetStatusSchema,
      description: 'Only pets with this status. Omitted: no filter.',
    }),
  },
  { additionalProperties: false },
);
export type ListPetsQuery = Static<typeof ListPetsQuery>;

export const PetIdParams = Type.Object({
  petId: pathId('The pet id, a positive integer. Malformed: 400; well-formed but unknown: 404.', 42),
});

export const PetPatch = Type.Object(
  {
    name: Type.Optional(NewPet.properties.name),
    categoryId: Type.Optional(NewPet.properties.categoryId),
    status: Type.Optional({ ...PetStatusSchema, description: 'The new availability status.' }),
  },
  {
    $id: 'PetPatch',
    additionalProperties: false,
    minProperties: 1,
    description:
      'A JSON Merge Patch of a pet: the fields to change, at least one. Every field is required on a pet, so ' +
      '`null` (which would remove it) is rejected, as are `id` and unknown fields.',
    example: { name: 'Rexy' },
  },
);
export type PetPatch = Static<typeof PetPatch>;
