/** The photos module's error codes (its `errors`). */
import { defineErrors } from '../../http/errors.js';

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
