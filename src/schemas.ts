/**
 * One TypeBox schema per shape. These drive request validation, response serialization,
 * the TypeScript types and the OpenAPI document.
 */
import { Type, type Static } from 'typebox';

export const PET_STATUSES = ['available', 'pending', 'sold'] as const;
export type PetStatus = (typeof PET_STATUSES)[number];

/** Ids are int64 in the contract; the service issues them within JavaScript's exact integer range. */
export const MAX_ID = Number.MAX_SAFE_INTEGER;
export const MAX_NAME_LENGTH = 100;

export const PetStatusSchema = Type.Unsafe<PetStatus>({
  type: 'string',
  enum: [...PET_STATUSES],
  description: 'Availability status.',
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
    }),
    categoryId: Type.Integer({
      format: 'int64',
      minimum: 1,
      maximum: MAX_ID,
      description:
        'Identifier of an existing category (see GET /v1/categories). Unknown ids are rejected with 400.',
    }),
    status: Type.Optional({
      ...PetStatusSchema,
      description: 'Availability status. Defaults to `available`.',
    }),
  },
  {
    additionalProperties: false,
    description: 'An animal to add. Unknown fields, `id` included, are rejected.',
  },
);
export type NewPet = Static<typeof NewPet>;

export const Pet = Type.Object(
  {
    id: Type.Integer({
      format: 'int64',
      minimum: 1,
      description: 'Unique identifier assigned by the service.',
    }),
    name: Type.String({ description: "The animal's name." }),
    categoryId: Type.Integer({
      format: 'int64',
      description: 'Identifier of the category the animal belongs to.',
    }),
    status: PetStatusSchema,
  },
  { additionalProperties: false },
);
export type Pet = Static<typeof Pet>;

export const Pets = Type.Array(Pet, { description: 'A page of pets, ordered by id ascending.' });

export const Category = Type.Object(
  {
    id: Type.Integer({ format: 'int64' }),
    name: Type.String(),
  },
  { additionalProperties: false },
);
export type Category = Static<typeof Category>;
export const Categories = Type.Array(Category);

export const ErrorDetail = Type.Object({
  field: Type.String({ description: 'The offending field, query parameter or header.' }),
  message: Type.String(),
});

export const ErrorSchema = Type.Object(
  {
    code: Type.String({
      description: 'Machine-readable error code from the documented catalogue (snake_case).',
    }),
    message: Type.String({ description: 'Human-readable description.' }),
    status: Type.Integer({ description: 'The HTTP status code of the response.' }),
    details: Type.Optional(Type.Array(ErrorDetail, { description: 'Present on some 400 responses.' })),
  },
  { description: 'Error' },
);

export const ListPetsQuery = Type.Object(
  {
    limit: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 100,
        default: 20,
        description: 'Page size, 1..100. Values outside the range are rejected with 400, never clamped.',
      }),
    ),
    status: Type.Optional({
      ...PetStatusSchema,
      description: 'Only pets with this status. Omitted: no filter.',
    }),
    cursor: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description:
          'Opaque cursor taken from the `Link: rel="next"` header of the previous page. Use it with the same `status`.',
      }),
    ),
  },
  { additionalProperties: false },
);
export type ListPetsQuery = Static<typeof ListPetsQuery>;

export const PetIdParams = Type.Object({
  petId: Type.Integer({
    format: 'int64',
    minimum: 1,
    description: 'The pet id, a positive integer. Malformed: 400; well-formed but unknown: 404.',
  }),
});

export const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      pattern: '^[\\x21-\\x7E]+$',
      description:
        'Makes the request safe to retry: a repeat with the same key and body (per account, within 24 h) replays the ' +
        'first response without creating anything; the same key with a different body answers 422; while the ' +
        'first request is still running, 409.',
    }),
  ),
});

export const Health = Type.Object({ status: Type.String() });
export const Readiness = Type.Object({
  status: Type.String({ description: '`ready`, `unavailable`, or `draining` while shutting down.' }),
  storage: Type.String({ description: '`ok` or `unavailable`.' }),
  rateLimitStore: Type.String({
    description: '`memory`, `redis`, or `memory-fallback` while Redis is unreachable.',
  }),
});
