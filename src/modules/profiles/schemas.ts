/**
 * A pet's profile: what a storefront shows beside the spec's `Pet` (which stays as it is). Every field is
 * optional; unknown fields are refused. `PetProfile` is what GET returns, `PetProfileInput` what PUT takes
 * (the same fields without `updatedAt`, which is accepted and ignored so a GET can be sent back as a PUT) and
 * `PetProfilePatch` the JSON Merge Patch (`null` removes a field).
 */
import { Type, type Static, type TSchema } from 'typebox';
import { issuedId, timestamp } from '../../http/schemas.js';

export const SEXES = ['female', 'male', 'unknown'] as const;
export const AGE_GROUPS = ['baby', 'young', 'adult', 'senior'] as const;
export const SIZES = ['small', 'medium', 'large', 'xlarge'] as const;

// Text may hold line breaks and tabs but no other control character (C0, DEL, C1); written without \p{…}
// classes, which tools reading the document without Unicode regular expressions would misread.
const TEXT_PATTERN = '^[^\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f-\\x9f]*$';
const LINE_PATTERN = '^[^\\x00-\\x1f\\x7f-\\x9f]*$';

const oneOf = <T extends readonly string[]>(values: T, description: string, example: T[number]) =>
  Type.Unsafe<T[number]>({ type: 'string', enum: [...values], description, example });

const tristate = (description: string) =>
  Type.Union([Type.Boolean(), Type.Null()], { description: `${description} \`null\`: not known.` });

const fields = {
  description: Type.String({
    maxLength: 4000,
    pattern: TEXT_PATTERN,
    description: 'Free text, at most 4,000 characters (line breaks allowed).',
    example: 'A calm, friendly dog who loves long walks.',
  }),
  breed: Type.String({
    minLength: 1,
    maxLength: 100,
    pattern: LINE_PATTERN,
    description: 'At most 100 characters.',
    example: 'Labrador Retriever',
  }),
  sex: oneOf(SEXES, '`female`, `male` or `unknown`.', 'female'),
  ageGroup: oneOf(AGE_GROUPS, '`baby`, `young`, `adult` or `senior`.', 'adult'),
  birthDate: Type.String({
    format: 'date',
    maxLength: 10,
    description: 'An RFC 3339 full date (`YYYY-MM-DD`), not in the future.',
    example: '2022-04-01',
  }),
  size: oneOf(SIZES, '`small`, `medium`, `large` or `xlarge`.', 'large'),
  colors: Type.Array(Type.String({ minLength: 1, maxLength: 30, pattern: LINE_PATTERN }), {
    maxItems: 3,
    description: 'At most 3 colours of at most 30 characters each.',
    example: ['black', 'white'],
  }),
};

const goodWithFields = {
  children: tristate('Good with children.'),
  dogs: tristate('Good with dogs.'),
  cats: tristate('Good with cats.'),
};

const latitude = Type.Number({ minimum: -90, maximum: 90, description: 'Degrees, −90..90.', example: 52.52 });
const longitude = Type.Number({
  minimum: -180,
  maximum: 180,
  description: 'Degrees, −180..180.',
  example: 13.405,
});
const postalCode = Type.String({
  minLength: 1,
  maxLength: 12,
  pattern: LINE_PATTERN,
  description: 'At most 12 characters.',
  example: '10115',
});

const LOCATION_NOTE =
  'Where the animal can be met. `latitude` and `longitude` are given together or not at all; ' +
  'search by distance (`near`) finds only pets with both.';

function optional<T extends Record<string, TSchema>>(props: T) {
  return Object.fromEntries(Object.entries(props).map(([k, v]) => [k, Type.Optional(v)])) as {
    [K in keyof T]: ReturnType<typeof Type.Optional<T[K]>>;
  };
}

function documentFields() {
  return {
    ...optional(fields),
    goodWith: Type.Optional(
      Type.Object(optional(goodWithFields), {
        additionalProperties: false,
        description: 'Each `true`, `false` or `null` (not known).',
      }),
    ),
    houseTrained: Type.Optional(tristate('House-trained.')),
    specialNeeds: Type.Optional(tristate('Has special needs.')),
    location: Type.Optional(
      Type.Object(optional({ postalCode, latitude, longitude }), {
        additionalProperties: false,
        description: LOCATION_NOTE,
      }),
    ),
  };
}

const EXAMPLE = {
  description: 'A calm, friendly dog who loves long walks.',
  breed: 'Labrador Retriever',
  sex: 'female',
  ageGroup: 'adult',
  birthDate: '2022-04-01',
  size: 'large',
  colors: ['black'],
  goodWith: { children: true, dogs: true, cats: null },
  houseTrained: true,
  specialNeeds: false,
  location: { postalCode: '10115', latitude: 52.52, longitude: 13.405 },
};

export const PetProfile = Type.Object(
  {
    ...documentFields(),
    updatedAt: Type.Union([timestamp('When the profile last changed (RFC 3339, UTC).'), Type.Null()], {
      description: 'Read-only: when the profile last changed; `null` for a pet that has none yet.',
    }),
  },
  {
    $id: 'PetProfile',
    additionalProperties: false,
    description:
      'What a storefront shows about an animal beside its `Pet`. Every field is optional; a pet without a ' +
      'profile has the empty one (`{ "updatedAt": null }`).',
    example: { ...EXAMPLE, updatedAt: '2026-06-15T12:00:30.000Z' },
  },
);
export type PetProfile = Static<typeof PetProfile>;

export const PetProfileInput = Type.Object(
  {
    ...documentFields(),
    updatedAt: Type.Optional(
      Type.Union([Type.String({ maxLength: 30 }), Type.Null()], {
        description: 'Read-only: accepted and ignored, so a profile read can be sent back as it is.',
      }),
    ),
  },
  {
    $id: 'PetProfileInput',
    additionalProperties: false,
    description: 'A whole profile (PUT replaces the stored one). Unknown fields are rejected with 400.',
    example: EXAMPLE,
  },
);
export type PetProfileInput = Static<typeof PetProfileInput>;

const nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const PetProfilePatch = Type.Object(
  {
    ...Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, Type.Optional(nullable(v))])),
    goodWith: Type.Optional(nullable(Type.Object(optional(goodWithFields), { additionalProperties: false }))),
    houseTrained: Type.Optional(tristate('House-trained.')),
    specialNeeds: Type.Optional(tristate('Has special needs.')),
    location: Type.Optional(
      nullable(
        Type.Object(
          optional({
            postalCode: nullable(postalCode),
            latitude: nullable(latitude),
            longitude: nullable(longitude),
          }),
          {
            additionalProperties: false,
          },
        ),
      ),
    ),
    updatedAt: Type.Optional(Type.Union([Type.String({ maxLength: 30 }), Type.Null()])),
  },
  {
    $id: 'PetProfilePatch',
    additionalProperties: false,
    minProperties: 1,
    description:
      'A JSON Merge Patch of the profile: fields given replace the stored ones, `null` removes one, nested ' +
      'objects (`goodWith`, `location`) merge field by field. The result is validated as a whole profile.',
    example: { description: 'Now house-trained!', houseTrained: true, location: null },
  },
);

/** The event object of `pet.profile_updated`: which pet (`id`, as in every pet event), its profile after the change. */
export const PetProfileChange = Type.Object(
  {
    id: issuedId('The pet whose profile changed (its id, as `object.id` of every pet event).', 42),
    profile: Type.Unsafe<PetProfile>({ $ref: 'PetProfile#' }),
  },
  {
    $id: 'PetProfileChange',
    additionalProperties: false,
    description: 'The object of a `pet.profile_updated` event.',
    example: { id: 42, profile: { breed: 'Labrador Retriever', updatedAt: '2026-06-15T12:00:30.000Z' } },
  },
);
