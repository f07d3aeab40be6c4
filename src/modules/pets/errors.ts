/** The pets module's error codes (its `errors`); profiles, photos and orders answer pet_not_found too. */
import { defineErrors } from '../../http/errors.js';

export const petErrors = defineErrors({
  pet_not_found: { status: 404, message: 'No pet with this id.' },
  pet_has_open_order: {
    status: 409,
    message:
      'The pet has an open order (placed or approved); its status cannot change and it cannot be deleted.',
  },
  gone: { status: 410, message: 'This operation has been removed. Use GET /v1/pets with the status filter.' },
});

export const petError = petErrors.error;
