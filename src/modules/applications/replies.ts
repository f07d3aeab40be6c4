/** What the applications' routes share: the actor, refusals as errors, answering a write. */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { hasScope } from '../../http/access.js';
import { preconditionFailed, strongEtag } from '../../http/conditional.js';
import { ApiError } from '../../http/errors.js';
import { refusal, replay } from '../../http/idempotency/index.js';
import { errorResponses, etagHeader, replayedHeader } from '../../http/responses.js';
import { orderError } from '../orders/index.js';
import type { Actor, Refusal } from './decisions.js';
import { applicationError } from './errors.js';
import { renderApplication } from './render.js';
import type { ApplicationStore, FullApplication, Replayable, WriteOutcome } from './store.js';

export const TAGS = ['applications'];
export const ETAG = {
  ETag: etagHeader('The application\'s version as a strong ETag (`"<n>"`); send it in If-Match.'),
};
export const REPLAYED = {
  'Idempotent-Replayed': replayedHeader('`true` when this response replays an earlier one.'),
};

export function described(status: number, description: string) {
  return { [status]: { ...errorResponses(status)[status]!, description } };
}

export function actorOf(request: FastifyRequest): Actor {
  return {
    keyId: request.principal!.keyId,
    accountId: request.principal!.account.id,
    manager: hasScope(request, 'applications:manage'),
  };
}

const notFound = () =>
  applicationError('application_not_found', 'No application with this id is visible to this key.');

/** A refusal as the API's error (never quoting what the client sent about the applicant). */
export function refusalError(id: string, result: Refusal, petId?: number): ApiError {
  switch (result.kind) {
    case 'not_found':
      return notFound();
    case 'precondition_failed':
      return preconditionFailed(strongEtag(result.version));
    case 'invalid_transition':
      return orderError(
        'invalid_transition',
        `The application is ${result.status}; this action does not apply to it.`,
      );
    case 'pet_not_available':
      return orderError(
        'pet_not_available',
        result.unknown
          ? `Pet ${petId ?? ''} does not exist.`.replace('  ', ' ')
          : `Pet ${petId ?? ''} is not available for adoption.`.replace('  ', ' '),
      );
    case 'open_application_limit':
      return applicationError(
        'open_application_limit',
        `This applicant already holds ${result.limit} open applications, the most they may.`,
      );
    case 'application_exists':
      return applicationError('application_exists');
    case 'info_request_limit':
      return applicationError(
        'info_request_limit',
        `This application has had ${result.limit} requests for information, the most it may; approve or reject it.`,
      );
    case 'invalid_answers':
      return new ApiError('validation_failed', {
        message: `Invalid request: ${result.problems.map((p) => `${p.field} ${p.message}`).join('; ')}.`,
        details: result.problems,
      });
  }
}

/** The answers every application write shares: visibility, the application with its ETag, replays. */
export function replies(store: ApplicationStore) {
  const visibleOrThrow = (request: FastifyRequest, id: string, found: FullApplication | undefined) => {
    const actor = actorOf(request);
    if (!found || (!actor.manager && found.application.accountId !== actor.accountId)) throw notFound();
    return found;
  };
  const answer = (reply: FastifyReply, found: FullApplication, status = 200) =>
    reply
      .code(status)
      .header('etag', strongEtag(found.application.version))
      .send(renderApplication(found.application, found.applicant));

  /** The outcome of a write: the application, its replay (re-read: records keep ids only), or the error. */
  async function settle(
    request: FastifyRequest,
    reply: FastifyReply,
    id: string,
    result: Replayable<WriteOutcome>,
    status: number,
    petId?: number,
  ): Promise<FastifyReply> {
    switch (result.kind) {
      case 'replayed': {
        const found = visibleOrThrow(request, id, result.id ? await store.get(result.id) : undefined);
        replay(reply, result.status);
        if (result.status === 201) reply.header('location', `/v1/applications/${found.application.id}`);
        return answer(reply, found, result.status);
      }
      case 'idempotency_mismatch':
        throw refusal('mismatch');
      case 'idempotency_in_progress':
        throw refusal('in_progress');
      case 'done':
        if (status === 201) reply.header('location', `/v1/applications/${result.application.application.id}`);
        return answer(reply, result.application, status);
      default:
        throw refusalError(id, result, petId);
    }
  }

  return { visibleOrThrow, answer, settle };
}
