/** The webhooks module's error codes (its `errors`). */
import { defineErrors } from '../../http/errors.js';

export const webhookErrors = defineErrors({
  webhook_endpoint_not_found: { status: 404, message: 'No webhook endpoint with this id in this account.' },
  delivery_not_found: { status: 404, message: 'This webhook endpoint has no delivery with this id.' },
  webhook_endpoint_limit: {
    status: 409,
    message: 'This account already holds the most webhook endpoints it may; delete one first.',
  },
  webhook_endpoint_exists: {
    status: 409,
    message: 'This account already has a webhook endpoint with this URL.',
  },
});

export const webhookError = webhookErrors.error;
