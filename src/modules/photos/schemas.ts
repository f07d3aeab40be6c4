/** The photos module's schemas: the `Photo` component and the routes' parameters and bodies. */
import { Type, type Static } from 'typebox';
import { issuedId, pathId, timestamp } from '../../http/schemas.js';

export const PHOTO_SIZES = ['small', 'medium', 'large', 'full'] as const;
export type PhotoSize = (typeof PHOTO_SIZES)[number];
/** At most this many photos a pet. */
export const MAX_PHOTOS = 20;
/**
 * The most pixels a side: what an upload may declare (checked at the write, src/modules/photos/image.ts) and
 * what the read schema states, so every stored photo serializes.
 */
export const MAX_PHOTO_SIDE = 16_384;
/** 128 random bits, base64url. */
export const PHOTO_ID_PATTERN = '^[A-Za-z0-9_-]{22}$';

const url = (description: string) =>
  Type.String({ maxLength: 2200, description, example: '/v1/photos/Xq3bN0c5Zt9uKp2sLw8aYA/medium.webp' });

export const Photo = Type.Object(
  {
    id: Type.String({
      pattern: PHOTO_ID_PATTERN,
      maxLength: 22,
      description: 'Unguessable id (128 random bits); the image URLs need no key.',
      example: 'Xq3bN0c5Zt9uKp2sLw8aYA',
    }),
    petId: issuedId('The pet shown.', 42),
    position: Type.Integer({
      minimum: 0,
      maximum: MAX_PHOTOS - 1,
      description: "Place in the pet's gallery, from 0; the photo at 0 is the primary one.",
      example: 0,
    }),
    width: Type.Integer({
      minimum: 1,
      maximum: MAX_PHOTO_SIDE,
      description: 'Width of the original, upright, in pixels.',
      example: 1600,
    }),
    height: Type.Integer({
      minimum: 1,
      maximum: MAX_PHOTO_SIDE,
      description: 'Height of the original, upright, in pixels.',
      example: 1200,
    }),
    createdAt: timestamp('When the photo was added (RFC 3339, UTC).'),
    urls: Type.Object(
      {
        small: url('WebP fitting 100×100.'),
        medium: url('WebP fitting 300×300.'),
        large: url('WebP fitting 600×600.'),
        full: url('WebP at most 1600 pixels on its long side.'),
      },
      {
        additionalProperties: false,
        description:
          'The WebP renderings, served without a key, cached for a year (immutable). Every metadata block is removed.',
      },
    ),
  },
  {
    $id: 'Photo',
    additionalProperties: false,
    description: 'A photo of a pet.',
    example: {
      id: 'Xq3bN0c5Zt9uKp2sLw8aYA',
      petId: 42,
      position: 0,
      width: 1600,
      height: 1200,
      createdAt: '2026-06-15T12:00:30.000Z',
      urls: {
        small: '/v1/photos/Xq3bN0c5Zt9uKp2sLw8aYA/small.webp',
        medium: '/v1/photos/Xq3bN0c5Zt9uKp2sLw8aYA/medium.webp',
        large: '/v1/photos/Xq3bN0c5Zt9uKp2sLw8aYA/large.webp',
        full: '/v1/photos/Xq3bN0c5Zt9uKp2sLw8aYA/full.webp',
      },
    },
  },
);
export type Photo = Static<typeof Photo>;

export const PhotoParams = Type.Object({
  petId: pathId('The pet id, a positive integer. Malformed: 400; well-formed but unknown: 404.', 42),
  photoId: Type.String({ maxLength: 64, description: 'The photo id.', example: 'Xq3bN0c5Zt9uKp2sLw8aYA' }),
});

/** A photo as stored. */
export interface PhotoRecord {
  id: string;
  petId: number;
  position: number;
  width: number;
  height: number;
  createdAt: number;
}

/** The API's view of a photo; `base` is the public URL (or '' for root-relative URLs). */
export function renderPhoto(photo: PhotoRecord, base: string): Photo {
  const at = (size: PhotoSize) => `${base}/v1/photos/${photo.id}/${size}.webp`;
  return {
    id: photo.id,
    petId: photo.petId,
    position: photo.position,
    width: photo.width,
    height: photo.height,
    createdAt: new Date(photo.createdAt).toISOString(),
    urls: { small: at('small'), medium: at('medium'), large: at('large'), full: at('full') },
  };
}

const within = (value: number, min: number, max: number) =>
  Number.isInteger(value) && value >= min && value <= max;

/**
 * The API's view of a stored photo, or null for a row that breaks what `Photo` states (one written before
 * the write checked every limit): a page leaves that photo out rather than failing whole.
 */
export function renderStoredPhoto(photo: PhotoRecord, base: string): Photo | null {
  const readable =
    within(photo.width, 1, MAX_PHOTO_SIDE) &&
    within(photo.height, 1, MAX_PHOTO_SIDE) &&
    within(photo.position, 0, MAX_PHOTOS - 1) &&
    Number.isFinite(photo.createdAt) &&
    PHOTO_ID.test(photo.id);
  return readable ? renderPhoto(photo, base) : null;
}
const PHOTO_ID = new RegExp(PHOTO_ID_PATTERN);
