export { PetAdoptionClient } from './client.js';
export { PetAdoptionError, RateLimitError, PetAdoptionConnectionError, type ErrorDetail } from './errors.js';
export { ERROR_CODES, type ErrorCode } from './generated/error-codes.js';
export type { components, operations, paths } from './generated/openapi.js';
export { PageIterable, type Page } from './paging.js';
export type { RateLimitState, RateLimitWindow } from './rate-limit.js';
export type { DeprecationNotice, PetAdoptionClientOptions, RequestOptions } from './transport.js';
export { verifyWebhook, WebhookVerificationError, type WebhookHeaders } from './webhooks.js';
export type * from './types.js';
