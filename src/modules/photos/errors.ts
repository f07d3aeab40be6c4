/** The photos module's error codes (its `errors`). */
import { ApiError, defineErrors } from '../../http/errors.js';
import { MAX_PHOTOS } from './schemas.js';

export const photoErrors = defineErrors({
  photo_not_found: { status: 404, message: 'No photo with this id.' },
  photo_limit: { status: 409, message: 'The pet has the most photos it may (20); delete one first.' },
  invalid_image: {
    status: 422,
    message:
      'The body is not a usable image of its Content-Type (it does not decode, is truncated, or is over 50 megapixels).',
  },
});

export const photoError = photoErrors.error;

export function photoNotFound(photoId: string): ApiError {
  return photoError('photo_not_found', `No photo ${photoId.slice(0, 64)} of this pet.`);
}

/** The upload's 415: the types it takes, where the API's own 415 names application/json. */
export function wrongType(): ApiError {
  return new ApiError(
    'unsupported_media_type',
    'The body must be the image itself: image/jpeg, image/png or image/webp.',
  );
}

export function limitError(): ApiError {
  return photoError('photo_limit', `The pet has ${MAX_PHOTOS} photos, the most it may; delete one first.`);
}
