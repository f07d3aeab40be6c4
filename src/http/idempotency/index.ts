/**
 * `Idempotency-Key` for any write route. A route turns the request into an `IdempotencyInput` (account,
 * operation, key, fingerprint of the body) with `idempotencyInput`; its repository runs the write through
 * the backend's `IdempotencyRepository.run…` inside the same transaction as the write, so the record and
 * the change commit together; the route answers a replay with `replay` and refusals with `refusal`.
 *
 * Rules (the same for every operation): per account and operation, a key is remembered for 24 hours; a
 * repeat with the same body replays the first response (`Idempotent-Replayed: true`) without doing
 * anything; the same key with another body is `422 idempotency_key_reused`; while the first request is
 * still running, `409 idempotency_in_progress`. Refused writes (a client error) record nothing, so a
 * corrected retry with the same key succeeds.
 *
 * A record belongs to the account, not to the API key that wrote it, so a retry survives a key rotation.
 * Two keys of one account may therefore see different things; a replay is answered only when the live
 * request could see the stored answer. The route's scopes are checked before any handler runs (access.ts),
 * so a key without them is refused before the record is read. What a key of the account may see beyond its
 * scopes is the route's `mayReplay`, asked of the stored answer inside the transaction: when it says no,
 * the request runs as if it carried no key (nothing replayed, nothing recorded). Pets are shared by every
 * account, so their routes need no `mayReplay`; an order is visible to its own account or to
 * `orders:manage`, and the stored order carries its account.
 */
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Clock } from '../../clock.js';
import {
  IDEMPOTENCY_RETENTION_MS,
  type IdempotencyInput,
  type Recorded,
} from '../../db/idempotency/records.js';
import { ApiError } from '../errors.js';

export {
  IDEMPOTENCY_RETENTION_MS,
  settleIdempotent,
  type Idempotent,
  type IdempotencyInput,
  type IdempotencyRefusal,
  type Recorded,
  replayAllowed,
} from '../../db/idempotency/records.js';

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

/** A stable hash of what identifies the request (usually its body, normalised by the route). */
export function fingerprint(value: unknown): string {
  return createHash('sha256').update(JSON.stringify(value)).digest('base64url');
}

/**
 * The idempotency input of an authenticated request, or undefined when it carries no Idempotency-Key.
 * `identity` is what makes two requests "the same" (e.g. the validated body with defaults left out).
 */
export function idempotencyInput(
  request: FastifyRequest,
  operation: string,
  identity: unknown,
  clock: Clock,
  mayReplay?: (recorded: Recorded) => boolean,
): IdempotencyInput | undefined {
  const key = request.headers['idempotency-key'];
  if (typeof key !== 'string') return undefined;
  const now = clock();
  return {
    accountId: request.principal!.account.id,
    operation,
    key,
    fingerprint: fingerprint(identity),
    notBefore: now - IDEMPOTENCY_RETENTION_MS,
    now,
    mayReplay,
  };
}

/** Marks a reply as a replay of the first response (the caller sets status-specific headers). */
export function replay(reply: FastifyReply, status: number): FastifyReply {
  return reply.code(status).header('idempotent-replayed', 'true');
}

/** The client error for a refused repeat. */
export function refusal(kind: 'mismatch' | 'in_progress'): ApiError {
  return kind === 'mismatch'
    ? new ApiError('idempotency_key_reused')
    : new ApiError('idempotency_in_progress', { headers: { 'retry-after': '1' } });
}
