/** searchListings' schemas: the `Listing` component and the documented query string. */
import { Type, type Static } from 'typebox';
import { pageQuery } from '../../http/paging.js';
import { ref } from '../../http/schemas.js';
import { Photo } from '../photos/index.js';
import { Pet } from '../pets/index.js';
import { PetProfile } from '../profiles/index.js';
import { DEFAULT_RADIUS_KM, MAX_LISTING_CURSOR_LENGTH, MAX_WORDS, SORTS } from './query.js';

export const Listing = Type.Object(
  {
    pet: ref(Pet),
    profile: ref(PetProfile),
    primaryPhoto: Type.Union([ref(Photo), Type.Null()], {
      description: 'The photo at position 0, or `null` for a pet without photos.',
    }),
    distanceKm: Type.Optional(
      Type.Number({
        minimum: 0,
        description:
          'Great-circle distance from `near`, in km, rounded to one decimal; present only with `near`.',
        example: 3.2,
      }),
    ),
  },
  {
    $id: 'Listing',
    additionalProperties: false,
    description: 'One animal as a storefront lists it: the pet, its profile and its primary photo.',
    example: {
      pet: { id: 42, name: 'Rex', categoryId: 1, status: 'available' },
      profile: { breed: 'Labrador Retriever', size: 'large', updatedAt: '2026-06-15T12:00:30.000Z' },
      primaryPhoto: null,
      distanceKm: 3.2,
    },
  },
);
export type Listing = Static<typeof Listing>;

export const Listings = Type.Array(ref(Listing), { maxItems: 100, description: 'A page of listings.' });

const csv = (description: string, example: string) =>
  Type.Optional(Type.String({ maxLength: 200, description, example }));
const flag = (description: string) =>
  Type.Optional(
    Type.Unsafe<'true' | 'false'>({
      type: 'string',
      enum: ['true', 'false'],
      description: `${description} Matches the stated value only: pets for which it is not known match neither.`,
    }),
  );

/** For the document and the static type; the route reads the query with parseListingQuery (query.ts). */
export const SearchListingsQuery = Type.Object(
  {
    status: csv('Comma-separated: `available`, `pending`, `sold`. Default `available`.', 'available'),
    categoryId: csv('Comma-separated category ids.', '1,2'),
    sex: csv('Comma-separated: `female`, `male`, `unknown`.', 'female'),
    ageGroup: csv('Comma-separated: `baby`, `young`, `adult`, `senior`.', 'young,adult'),
    size: csv('Comma-separated: `small`, `medium`, `large`, `xlarge`.', 'small,medium'),
    goodWithChildren: flag('Good with children.'),
    goodWithDogs: flag('Good with dogs.'),
    goodWithCats: flag('Good with cats.'),
    houseTrained: flag('House-trained.'),
    specialNeeds: flag('Has special needs.'),
    hasPhotos: Type.Optional(
      Type.Unsafe<'true' | 'false'>({
        type: 'string',
        enum: ['true', 'false'],
        description: '`true`: only pets with photos; `false`: only pets without.',
      }),
    ),
    q: Type.Optional(
      Type.String({
        maxLength: 200,
        description: `Words (at most ${MAX_WORDS}) matched against the name, breed and description; every word must match, ignoring case and accents.`,
        example: 'labrador calm',
      }),
    ),
    near: Type.Optional(
      Type.String({
        maxLength: 60,
        description:
          '`<latitude>,<longitude>`: only pets whose location is within `radiusKm` (pets without a location are excluded); adds `distanceKm`.',
        example: '52.52,13.405',
      }),
    ),
    radiusKm: Type.Optional(
      Type.Number({
        minimum: 1,
        maximum: 500,
        default: DEFAULT_RADIUS_KM,
        description: `Radius around \`near\` in km, 1..500 (default ${DEFAULT_RADIUS_KM}); needs \`near\`.`,
      }),
    ),
    sort: Type.Optional(
      Type.Unsafe<(typeof SORTS)[number]>({
        type: 'string',
        enum: [...SORTS],
        default: 'newest',
        description:
          '`newest` (default: newest pet first), `oldest`, `distance` (needs `near`), `name`; ties by id.',
      }),
    ),
    ...pageQuery('the same parameters', { cursorMaxLength: MAX_LISTING_CURSOR_LENGTH }),
  },
  { additionalProperties: false },
);
