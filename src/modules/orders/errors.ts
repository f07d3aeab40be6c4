/** The orders module's error codes (its `errors`). */
import { defineErrors } from '../../http/errors.js';

export const orderErrors = defineErrors({
  order_not_found: { status: 404, message: 'No order with this id.' },
  invalid_transition: {
    status: 409,
    message: 'The order is not in a status this action applies to.',
  },
  pet_not_available: { status: 409, message: 'The pet is not available for adoption.' },
  open_order_limit: {
    status: 409,
    message: 'This account already holds the most open orders it may; cancel or complete one first.',
  },
});

export const orderError = orderErrors.error;
